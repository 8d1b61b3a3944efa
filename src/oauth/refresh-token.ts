import { createHmac, randomBytes } from 'node:crypto';
import type { ConsumeResult, RefreshTokenGrant, RefreshTokenStore } from '../stores/types.ts';

/**
 * Refresh tokens are opaque to clients: `<familyId>.<secret>`, with 256 random bits of
 * secret (RFC 6749 §10.10 asks for at least 128). Carrying the family id lets the store
 * keep a family's keys together (one Redis Cluster slot) and find the family of a token
 * presented twice. Only an HMAC of the whole token is ever stored.
 */
export interface MintedRefreshToken {
  token: string;
  familyId: string;
  digest: string;
}

const FAMILY_ID = /^[A-Za-z0-9_-]{22}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export function newFamilyId(): string {
  return randomBytes(16).toString('base64url');
}

export function mintRefreshToken(familyId: string, encryptionKey: Buffer): MintedRefreshToken {
  const token = `${familyId}.${randomBytes(32).toString('base64url')}`;
  return { token, familyId, digest: digestRefreshToken(token, encryptionKey) };
}

export function digestRefreshToken(token: string, encryptionKey: Buffer): string {
  return createHmac('sha256', encryptionKey).update(token).digest('base64url');
}

/** Splits a presented token; returns null for anything that could not have come from us. */
export function parseRefreshToken(token: string): { familyId: string } | null {
  const [familyId, secret, extra] = token.split('.');
  if (extra !== undefined || !familyId || !secret || !FAMILY_ID.test(familyId) || !SECRET.test(secret))
    return null;
  return { familyId };
}

/** Issues refresh tokens into a store and consumes them; the store never sees a raw token. */
export interface RefreshTokenService {
  /** The new token, or null when its family was revoked in the meantime. */
  issueRefreshToken(
    grant: Omit<RefreshTokenGrant, 'familyId' | 'expiresAt'> & {
      familyId?: string;
      /** The token this one rotates, which becomes `rotated` with the save. */
      replaces?: string;
    },
  ): Promise<string | null>;
  consumeRefreshToken(token: string): Promise<ConsumeResult>;
  /** Gives a consumed token back unused after a refusal; `attempt` is the consume's own. */
  releaseRefreshToken(token: string, attempt: string): Promise<void>;
  revokeFamily(familyId: string): Promise<void>;
}

export function createRefreshTokenService(options: {
  store: RefreshTokenStore;
  encryptionKey: Buffer;
  ttlSeconds: number;
}): RefreshTokenService {
  const { store, encryptionKey, ttlSeconds } = options;
  return {
    async issueRefreshToken({ replaces, ...grant }) {
      const minted = mintRefreshToken(grant.familyId ?? newFamilyId(), encryptionKey);
      // Each rotation gets a full lifetime: a family lives as long as it keeps being used.
      const saved = await store.save(
        minted.digest,
        { ...grant, familyId: minted.familyId, expiresAt: Date.now() + ttlSeconds * 1000 },
        replaces === undefined ? undefined : digestRefreshToken(replaces, encryptionKey),
      );
      return saved ? minted.token : null;
    },
    async consumeRefreshToken(token) {
      const parsed = parseRefreshToken(token);
      if (!parsed) return { outcome: 'unknown' };
      return store.consume(parsed.familyId, digestRefreshToken(token, encryptionKey));
    },
    async releaseRefreshToken(token, attempt) {
      const parsed = parseRefreshToken(token);
      if (parsed) await store.release(parsed.familyId, digestRefreshToken(token, encryptionKey), attempt);
    },
    revokeFamily: (familyId) => store.revokeFamily(familyId),
  };
}
