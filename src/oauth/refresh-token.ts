import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RefreshTokenMacKeys } from './key-ring.ts';
import type { RefreshTokenGrant, RefreshTokenStore } from './model.ts';

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
  /^(?<body>(?<familyId>[\w-]{22})\.(?<generation>0|[1-9]\d{0,8})\.(?<keyId>[\w-]{1,16})\.[\w-]{43})\.(?<mac>[\w-]{22})$/;
const MAC_BYTES = 16;

export function newFamilyId(): string {
  return randomBytes(16).toString('base64url');
}

interface PresentedToken {
  familyId: string;
  generation: number;
  mac: string;
}

function macOf(body: string, key: Buffer): string {
  return createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES).toString('base64url');
}

function mintRefreshToken(
  familyId: string,
  generation: number,
  keys: RefreshTokenMacKeys,
): { token: string; mac: string } {
  const { id, key } = keys.current();
  const body = `${familyId}.${generation}.${id}.${randomBytes(32).toString('base64url')}`;
  const mac = macOf(body, key);
  return { token: `${body}.${mac}`, mac };
}

/**
 * The token's family, generation and MAC, or null for anything that could not have come
 * from us: malformed, a key that is not (or no longer) in the ring, or a MAC that fails.
 */
async function verifyRefreshToken(token: string, keys: RefreshTokenMacKeys): Promise<PresentedToken | null> {
  const parts = TOKEN.exec(token)?.groups;
  if (!parts) return null;
  const { body = '', familyId = '', generation = '', keyId = '', mac = '' } = parts;
  const key = await keys.find(keyId);
  if (!key || !timingSafeEqual(Buffer.from(macOf(body, key)), Buffer.from(mac))) return null;
  return { familyId, generation: Number(generation), mac };
}

/** A consumed token's hold on its family: what rotates it, or gives it back. */
export interface RefreshTokenHold {
  familyId: string;
  generation: number;
  /** The consumed token's MAC: what a rollback of its rotation restores. */
  mac: string;
  attempt: string;
  /** The MAC of the successor once a rotation was tried: it names that rotation to undo. */
  successorMac?: string;
}

export type RefreshTokenVerdict =
  | { outcome: 'consumed'; grant: RefreshTokenGrant; hold: RefreshTokenHold }
  /** Another refresh holds this very token (a double submit): refuse, revoke nothing. */
  | { outcome: 'in-flight' }
  /** An older generation came back: the token leaked, and its family is already revoked. */
  | { outcome: 'reused'; grant: RefreshTokenGrant }
  | { outcome: 'revoked' }
  | { outcome: 'unknown' };

/** Issues refresh tokens into a store and consumes them; the store never sees a raw token. */
export interface RefreshTokenService {
  /**
   * A new family's first token, or, with `rotates`, the successor of the consumed token.
   * Null when the family was revoked or the hold lost in the meantime.
   */
  issueRefreshToken(
    grant: Omit<RefreshTokenGrant, 'familyId' | 'expiresAt'> & {
      familyId?: string;
      rotates?: RefreshTokenHold;
    },
  ): Promise<string | null>;
  consumeRefreshToken(token: string): Promise<RefreshTokenVerdict>;
  /** Gives the token back after a refresh that failed, whatever stage it reached. */
  releaseRefreshToken(hold: RefreshTokenHold): Promise<void>;
  revokeFamily(familyId: string): Promise<void>;
}

export function createRefreshTokenService(options: {
  store: RefreshTokenStore;
  keys: RefreshTokenMacKeys;
  ttlSeconds: number;
  /** How long a consume holds its token before anyone may consume it again. */
  leaseSeconds: number;
}): RefreshTokenService {
  const { store, keys, ttlSeconds, leaseSeconds } = options;
  return {
    async issueRefreshToken({ rotates, ...fields }) {
      const familyId = rotates?.familyId ?? fields.familyId ?? newFamilyId();
      const generation = rotates ? rotates.generation + 1 : 0;
      const minted = mintRefreshToken(familyId, generation, keys);
      // Each rotation gets a full lifetime: a family lives as long as it keeps being used.
      const grant = { ...fields, familyId, expiresAt: Date.now() + ttlSeconds * 1000 };
      const successor = { generation, mac: minted.mac };
      if (rotates) rotates.successorMac = minted.mac;
      const saved = rotates
        ? await store.rotate(grant, rotates.attempt, successor)
        : await store.create(grant, successor);
      return saved ? minted.token : null;
    },
    async consumeRefreshToken(token) {
      const presented = await verifyRefreshToken(token, keys);
      if (!presented) return { outcome: 'unknown' };
      // 96 random bits: unique among a family's refreshes, and small in the family's record.
      const attempt = randomBytes(12).toString('base64url');
      const result = await store
        .consume(presented.familyId, presented, { attempt, leaseUntil: Date.now() + leaseSeconds * 1000 })
        .catch((error: unknown) => {
          // A consume whose reply was lost (a timeout) may still run, later. The release
          // follows it on the same connection, so the token is not held for the lease.
          store.release(presented.familyId, attempt).catch(() => undefined);
          throw error;
        });
      if (result.outcome !== 'consumed') return result;
      return {
        outcome: 'consumed',
        grant: result.grant,
        hold: { ...presented, attempt },
      };
    },
    releaseRefreshToken: ({ familyId, attempt, mac, successorMac }) =>
      store.release(
        familyId,
        attempt,
        successorMac === undefined ? undefined : { successorMac, previousMac: mac },
      ),
    revokeFamily: (familyId) => store.revokeFamily(familyId),
  };
}
