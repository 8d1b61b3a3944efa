import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  type KeyObject,
  timingSafeEqual,
} from 'node:crypto';
import { isCanonicalBase64url } from '../base64url.ts';
import { randomBase64url, randomBuffer } from '../random-pool.ts';
import type { RefreshTokenMacKeys } from './key-ring.ts';
import { MAX_REFRESH_TOKEN_RETRY_SECONDS, type RefreshTokenFamily, type RefreshTokenStore } from './model.ts';

/**
 * Refresh tokens are opaque to clients: `<familyId>.<generation>.<keyId>.<secret>.<mac>`.
 * The family id keeps a family's state together (one Redis Cluster slot); the generation
 * counts the family's rotations, so the store keeps one record per family and still knows
 * an older token when it comes back; the secret (256 random bits, RFC 6749 §10.10 asks for
 * at least 128) is in no store; the MAC, under the refresh-token key named by `keyId`,
 * covers everything before it. Only a token whose MAC verifies reaches the store, so
 * nobody without the key can forge an "older generation" to get a family revoked.
 */
const TOKEN =
  /^(?<body>(?<familyId>[\w-]{22})\.(?<generation>0|[1-9]\d{0,8})\.(?<keyId>[\w-]{1,16})\.(?<secret>[\w-]{43}))\.(?<mac>[\w-]{22})$/;
const MAC_BYTES = 16;
const FAMILY_ID_BYTES = 16;
const SECRET_BYTES = 32;

export function newFamilyId(): string {
  return randomBase64url(FAMILY_ID_BYTES);
}

function macOf(body: string, key: KeyObject): string {
  return createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES).toString('base64url');
}

function mintRefreshToken(
  familyId: string,
  generation: number,
  keys: RefreshTokenMacKeys,
): { token: string; mac: string } {
  const { id, key } = keys.current();
  const body = `${familyId}.${generation}.${id}.${randomBase64url(SECRET_BYTES)}`;
  const mac = macOf(body, key);
  return { token: `${body}.${mac}`, mac };
}

/**
 * The token's family, generation and MAC, or null for anything that could not have come
 * from us: malformed, a key that is not (or no longer) in the ring, or a MAC that fails.
 */
async function verifyRefreshToken(
  token: string,
  keys: RefreshTokenMacKeys,
): Promise<PresentedRefreshToken | null> {
  const parts = TOKEN.exec(token)?.groups;
  if (!parts) return null;
  const { body = '', familyId = '', generation = '', keyId = '', secret = '', mac = '' } = parts;
  // One spelling each (RFC 4648 §3.5), as they were minted.
  if (
    !isCanonicalBase64url(familyId, FAMILY_ID_BYTES) ||
    !isCanonicalBase64url(secret, SECRET_BYTES) ||
    !isCanonicalBase64url(mac, MAC_BYTES)
  )
    return null;
  const key = await keys.find(keyId);
  if (!key || !timingSafeEqual(Buffer.from(macOf(body, key)), Buffer.from(mac))) return null;
  return { token, familyId, generation: Number(generation), mac };
}

/** A token whose MAC verified: itself, and what the store knows it by. */
export interface PresentedRefreshToken {
  token: string;
  familyId: string;
  generation: number;
  mac: string;
}

/** What a presented token is now; reading it changes nothing. */
export type RefreshTokenInspection =
  /**
   * A token a refresh may redeem: the family's current one, or (`retry`) the one its last
   * rotation replaced, back within the retry window while its successor is unused.
   */
  | { state: 'current' | 'retry'; family: RefreshTokenFamily; presented: PresentedRefreshToken }
  /** An earlier token came back otherwise: it leaked. */
  | { state: 'reused'; family: RefreshTokenFamily }
  | { state: 'revoked' }
  | { state: 'unknown' };

/** What redeeming a token did: the successor it answers with, or why there is none. */
export type RefreshTokenRedemption =
  /** `rotated`: a new successor; `retried`: the one the last rotation made, again. */
  | { outcome: 'rotated' | 'retried'; refreshToken: string }
  /** `reused`: the family is revoked with that verdict. */
  | { outcome: 'reused' | 'revoked' | 'unknown' };

/** The reading half of the refresh-token service: what a grant's checks may use. */
export interface RefreshTokenReader {
  inspectRefreshToken(token: string): Promise<RefreshTokenInspection>;
}

/** Issues refresh tokens into a store and redeems them; the store never sees a raw token. */
export interface RefreshTokenService extends RefreshTokenReader {
  /** A new family's first token; null when a family with that id exists (a revoked one among them). */
  issueRefreshToken(
    family: Omit<RefreshTokenFamily, 'familyId' | 'expiresAt'> & { familyId?: string },
  ): Promise<string | null>;
  /**
   * The one step of a refresh that changes state, atomic in the store: a current token is
   * replaced by a new successor with a new lifetime; the token a rotation just replaced, or
   * one a concurrent refresh has just rotated, is answered with that rotation's successor.
   */
  redeemRefreshToken(
    presented: PresentedRefreshToken,
    family: RefreshTokenFamily,
  ): Promise<RefreshTokenRedemption>;
  revokeFamily(familyId: string): Promise<void>;
}

export function createRefreshTokenService(options: {
  store: RefreshTokenStore;
  keys: RefreshTokenMacKeys;
  ttlSeconds: number;
  /** How long the token a rotation replaced is answered with its successor; 0 for never. */
  retrySeconds: number;
}): RefreshTokenService {
  const { store, keys, ttlSeconds, retrySeconds } = options;
  // Each rotation gets a full lifetime: a family lives as long as it keeps being used.
  const renewed = (family: Omit<RefreshTokenFamily, 'expiresAt'>) => ({
    ...family,
    expiresAt: Date.now() + ttlSeconds * 1000,
  });
  return {
    async issueRefreshToken(fields) {
      const familyId = fields.familyId ?? newFamilyId();
      const minted = mintRefreshToken(familyId, 0, keys);
      const created = await store.create(renewed({ ...fields, familyId }), {
        generation: 0,
        mac: minted.mac,
      });
      return created ? minted.token : null;
    },
    async inspectRefreshToken(token) {
      const presented = await verifyRefreshToken(token, keys);
      if (!presented) return { state: 'unknown' };
      const found = await store.inspect(presented.familyId, presented);
      if (found.state === 'current' || found.state === 'retry')
        return { state: found.state, family: found.family, presented };
      return found;
    },
    async redeemRefreshToken(presented, family) {
      const generation = presented.generation + 1;
      const successor = mintRefreshToken(presented.familyId, generation, keys);
      const now = Date.now();
      const retry =
        retrySeconds > 0
          ? {
              sealedSuccessor: sealSuccessor(presented, successor.token),
              until: now + retrySeconds * 1000,
              limit: now + MAX_REFRESH_TOKEN_RETRY_SECONDS * 1000,
            }
          : undefined;
      const rotation = await store.rotate(
        renewed(family),
        presented,
        { generation, mac: successor.mac },
        retry,
      );
      if (rotation.state === 'rotated') return { outcome: 'rotated', refreshToken: successor.token };
      if (rotation.state !== 'retry') return { outcome: rotation.state };
      const earlier = openSuccessor(presented, rotation.sealedSuccessor);
      return earlier ? { outcome: 'retried', refreshToken: earlier } : { outcome: 'unknown' };
    },
    revokeFamily: (familyId) => store.revokeFamily(familyId),
  };
}

/**
 * The retry record keeps a rotation's successor sealed (AES-256-GCM) under a key derived
 * (HKDF-SHA-256) from the whole token the rotation replaced. No store holds that token,
 * only its MAC, so only its holder can open the successor again; the family id and both
 * generations are the associated data, so a sealed successor opens for its own rotation only.
 */
const SEAL = { cipher: 'aes-256-gcm', nonceBytes: 12, tagBytes: 16, info: 'refresh-token retry' } as const;

/** HKDF's salt when none is given (RFC 5869 §2.2): a hash length of zeros, as a KeyObject once. */
const NO_SALT = createSecretKey(Buffer.alloc(32));
/** HKDF-Expand's input for the first (and, for 32 bytes of SHA-256, only) block: info, then 1. */
const EXPAND_INPUT = Buffer.concat([Buffer.from(SEAL.info), Buffer.from([1])]);

/**
 * HKDF-SHA-256 (RFC 5869) of the token with no salt and `SEAL.info`, 32 bytes, as a KeyObject
 * (a cipher given a Buffer prepares the key at several times the cost). Written as its two
 * HMACs, extract then one block of expand, the same bytes `hkdfSync` gives, because
 * `hkdfSync` costs about 9.5 µs a call here (it turns its input into a KeyObject and runs a
 * crypto job) against about 6 µs for the two HMACs with KeyObject keys.
 */
function sealingKey(previous: PresentedRefreshToken): KeyObject {
  const pseudoRandomKey = createHmac('sha256', NO_SALT).update(previous.token).digest();
  return createSecretKey(
    createHmac('sha256', createSecretKey(pseudoRandomKey)).update(EXPAND_INPUT).digest(),
  );
}

/** What the seal binds the successor to: its family, and the rotation from the previous generation. */
function sealedFor(previous: PresentedRefreshToken): Buffer {
  return Buffer.from(`${previous.familyId}.${previous.generation}.${previous.generation + 1}`);
}

/** The successor's part after its family id and generation, sealed; base64url of nonce, text, tag. */
function sealSuccessor(previous: PresentedRefreshToken, successor: string): string {
  const prefix = `${previous.familyId}.${previous.generation + 1}.`;
  const nonce = randomBuffer(SEAL.nonceBytes);
  const cipher = createCipheriv(SEAL.cipher, sealingKey(previous), nonce).setAAD(sealedFor(previous));
  const text = Buffer.concat([cipher.update(successor.slice(prefix.length), 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, text, cipher.getAuthTag()]).toString('base64url');
}

/** The successor a retry record sealed for this token, or null when it does not open. */
function openSuccessor(previous: PresentedRefreshToken, sealed: string): string | null {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length <= SEAL.nonceBytes + SEAL.tagBytes) return null;
  try {
    const decipher = createDecipheriv(SEAL.cipher, sealingKey(previous), bytes.subarray(0, SEAL.nonceBytes))
      .setAAD(sealedFor(previous))
      .setAuthTag(bytes.subarray(bytes.length - SEAL.tagBytes));
    const text = Buffer.concat([
      decipher.update(bytes.subarray(SEAL.nonceBytes, bytes.length - SEAL.tagBytes)),
      decipher.final(),
    ]);
    return `${previous.familyId}.${previous.generation + 1}.${text.toString('utf8')}`;
  } catch {
    return null;
  }
}
