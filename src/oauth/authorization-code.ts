import { digestOneTimeSecret, isOneTimeSecretShaped, newOneTimeSecret } from '../one-time-secrets.ts';
import type { AuthorizationCodeGrant, CodeFlowStore } from './model.ts';
import { newFamilyId } from './refresh-token.ts';

/** The reading half of the code service: what the authorization code grant's checks may use. */
export interface AuthorizationCodeReader {
  /** The grant of an unexpired code, used or not; null for anything else. */
  findCode(code: string): Promise<AuthorizationCodeGrant | null>;
}

/**
 * Authorization codes (RFC 6749 §4.1.2): 256 random bits, single use, short-lived. The store
 * sees only their digest. Each code is given the refresh-token family its tokens will be
 * issued in, so that presenting it a second time can revoke them.
 */
export interface AuthorizationCodeService extends AuthorizationCodeReader {
  issueCode(grant: Omit<AuthorizationCodeGrant, 'familyId' | 'expiresAt'>): Promise<string>;
  /** Uses the code up for `attempt`, an id new for each presentation (see CodeFlowStore). */
  consumeCode(code: string, attempt: string): Promise<'consumed' | 'reused' | 'unknown'>;
  /** Gives back a code `attempt` consumed, for an exchange that failed before it answered. */
  releaseCode(code: string, attempt: string): Promise<void>;
  /** Whether the code was presented again since it was consumed. */
  wasReused(code: string): Promise<boolean>;
}

export function createAuthorizationCodeService(options: {
  store: CodeFlowStore;
  ttlSeconds: number;
  now?: () => number;
}): AuthorizationCodeService {
  const { store, ttlSeconds } = options;
  const now = options.now ?? Date.now;
  return {
    async issueCode(grant) {
      const { secret, digest } = newOneTimeSecret();
      await store.saveCode(digest, {
        ...grant,
        familyId: newFamilyId(),
        expiresAt: now() + ttlSeconds * 1000,
      });
      return secret;
    },
    async findCode(code) {
      return isOneTimeSecretShaped(code) ? store.findCode(digestOneTimeSecret(code)) : null;
    },
    async consumeCode(code, attempt) {
      return isOneTimeSecretShaped(code) ? store.consumeCode(digestOneTimeSecret(code), attempt) : 'unknown';
    },
    async releaseCode(code, attempt) {
      if (isOneTimeSecretShaped(code)) await store.releaseCode(digestOneTimeSecret(code), attempt);
    },
    async wasReused(code) {
      return isOneTimeSecretShaped(code) && store.wasReused(digestOneTimeSecret(code));
    },
  };
}
