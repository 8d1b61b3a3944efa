import { createHash, type KeyObject } from 'node:crypto';

/** An RSA key pair that signs access tokens (the current one) or only verifies them (earlier ones). */
export interface SigningKey {
  kid: string;
  createdAt: Date;
  supersededAt?: Date;
  publicKey: KeyObject;
  /** Present on the current key only. */
  privateKey?: KeyObject;
}

/**
 * A refresh-token MAC key: 32 random bytes, the HMAC-SHA256 key of the MAC every refresh
 * token carries, from which the sign-in form's seal key is also derived. It encrypts nothing.
 */
export interface RefreshTokenMacKey {
  id: string;
  createdAt: Date;
  supersededAt?: Date;
  key: Buffer;
}

/** A generation of the ring, read and checked. The first key of each list is the current one. */
export interface KeyRingState {
  /** 0 for the three files of earlier versions. */
  generation: number;
  signing: readonly [SigningKey & { privateKey: KeyObject }, ...SigningKey[]];
  refreshTokenMac: readonly [RefreshTokenMacKey, ...RefreshTokenMacKey[]];
}

export class NoKeys extends Error {
  constructor(dir: string) {
    super(`No keys in ${dir}; run keys:generate`);
    this.name = 'NoKeys';
  }
}

/**
 * The id of a refresh-token MAC key, derived from its bytes so that every node computes the
 * same id for the same key (6 bytes of SHA-256, base64url).
 */
export function refreshTokenMacKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 8);
}

/** RFC 7638: SHA-256 over the required RSA members in lexicographic order, base64url. */
export function thumbprint(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' });
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n }))
    .digest('base64url');
}
