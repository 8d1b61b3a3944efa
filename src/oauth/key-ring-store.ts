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

/** The keys of a ring. In each list the first key is the current one: it signs (mints); the others verify. */
export interface KeyRingKeys {
  signing: readonly [SigningKey & { privateKey: KeyObject }, ...SigningKey[]];
  refreshTokenMac: readonly [RefreshTokenMacKey, ...RefreshTokenMacKey[]];
}

/** A generation of the ring, read and checked. */
export interface KeyRingState extends KeyRingKeys {
  /** Grows with every change; 0 for the key files of versions before rings. */
  generation: number;
}

/**
 * Where the key ring is kept, shared by every worker and node. Each change makes a new
 * generation, made whole or not at all: no reader ever sees half a ring, and of concurrent
 * changes none is lost.
 */
export interface KeyRingStore {
  /** Where the ring is kept, for messages: the directory. */
  readonly location: string;
  /** The number of the generation in force, at the cost of a glance (processes poll it). */
  newestGeneration(): Promise<number>;
  /** The ring in force; throws NoKeys when there is none. */
  read(): Promise<KeyRingState>;
  /**
   * Makes the next generation: `change` returns its keys, reading the ring in force through
   * `current` (undefined when there is none) only if it needs it, so that a ring that cannot
   * be read can still be replaced. When another writer changes the ring first, `change` runs
   * again on top of that writer's ring; whatever `change` throws abandons the commit, with
   * nothing written. Returns the generation written.
   */
  commit(
    change: (current: () => Promise<KeyRingState | undefined>) => Promise<KeyRingKeys>,
  ): Promise<KeyRingState>;
}

export class NoKeys extends Error {
  constructor(location: string) {
    super(`No keys in ${location}; run keys:generate`);
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
