import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RefreshTokenGrant, RefreshTokenStore } from '../stores/types.ts';
import type { RefreshTokenKeys } from './key-ring.ts';

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

function macOf(body: string, key: Buffer): string {
  return createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES).toString('base64url');
}

function mintRefreshToken(
  familyId: string,
  generation: number,
  keys: RefreshTokenKeys,
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
function verifyRefreshToken(token: string, keys: RefreshTokenKeys): PresentedRefreshToken | null {
  const parts = TOKEN.exec(token)?.groups;
  if (!parts) return null;
  const { body = '', familyId = '', generation = '', keyId = '', mac = '' } = parts;
  const key = keys.byId(keyId);
  if (!key || !timingSafeEqual(Buffer.from(macOf(body, key)), Buffer.from(mac))) return null;
  return { familyId, generation: Number(generation), mac };
}

/** A consumed token's hold on its family: what rotates it, or gives it back. */
interface RefreshTokenHold {
  familyId: string;
  generation: number;
  /** The consumed token's MAC: what a rollback of its rotation restores. */
  mac: string;
  attempt: string;
}

/** A token whose MAC verified, as the store knows it. */
export interface PresentedRefreshToken {
  familyId: string;
  generation: number;
  mac: string;
}

/** What a presented token is now; reading it changes nothing. */
export type RefreshTokenInspection =
  /** The family's current token, unused: a refresh may redeem it. */
  | { state: 'current'; grant: RefreshTokenGrant; presented: PresentedRefreshToken }
  /** Another refresh holds this very token (a double submit): refuse, revoke nothing. */
  | { state: 'in-flight' }
  /** An older generation came back: the token leaked. */
  | { state: 'reused'; grant: RefreshTokenGrant }
  | { state: 'revoked' }
  | { state: 'unknown' };

/** What redeeming a token did: its successor, or why there is none. */
export type RefreshTokenRedemption =
  | { outcome: 'rotated'; refreshToken: string }
  /** `reused`: the family is revoked with that verdict. */
  | { outcome: 'in-flight' | 'reused' | 'revoked' | 'unknown' };

/** The reading half of the refresh-token service: what a grant's checks may use. */
export interface RefreshTokenReader {
  inspectRefreshToken(token: string): Promise<RefreshTokenInspection>;
}

/** Issues refresh tokens into a store and redeems them; the store never sees a raw token. */
export interface RefreshTokenService extends RefreshTokenReader {
  /** A new family's first token; null when a family with that id exists (a revoked one among them). */
  issueRefreshToken(
    grant: Omit<RefreshTokenGrant, 'familyId' | 'expiresAt'> & { familyId?: string },
  ): Promise<string | null>;
  /**
   * The one step of a refresh that changes state: the presented token (as an inspection
   * found it current) is used up and replaced by its successor, with a new lifetime. A
   * failure half-way gives the token back, so the client's retry works.
   */
  redeemRefreshToken(
    presented: PresentedRefreshToken,
    grant: RefreshTokenGrant,
  ): Promise<RefreshTokenRedemption>;
  revokeFamily(familyId: string): Promise<void>;
}

export function createRefreshTokenService(options: {
  store: RefreshTokenStore;
  keys: RefreshTokenKeys;
  ttlSeconds: number;
  /** How long a consume holds its token before anyone may consume it again. */
  leaseSeconds: number;
}): RefreshTokenService {
  const { store, keys, ttlSeconds, leaseSeconds } = options;
  // Each rotation gets a full lifetime: a family lives as long as it keeps being used.
  const renewed = (grant: Omit<RefreshTokenGrant, 'expiresAt'>) => ({
    ...grant,
    expiresAt: Date.now() + ttlSeconds * 1000,
  });

  /** Takes the token for one refresh, atomically; the others see it in flight. */
  async function consume(presented: PresentedRefreshToken) {
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
    return { result, hold: { ...presented, attempt } };
  }

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
      const presented = verifyRefreshToken(token, keys);
      if (!presented) return { state: 'unknown' };
      const found = await store.inspect(presented.familyId, presented);
      return found.state === 'current' ? { ...found, presented } : found;
    },
    async redeemRefreshToken(presented, grant) {
      const { result, hold } = await consume(presented);
      if (result.outcome !== 'consumed') return { outcome: result.outcome };
      const minted = mintRefreshToken(presented.familyId, presented.generation + 1, keys);
      const successor = { generation: presented.generation + 1, mac: minted.mac };
      try {
        // Null: revoked meanwhile (reuse detected, password changed), or the lease was lost.
        const rotated = await store.rotate(renewed(grant), hold.attempt, successor);
        return rotated ? { outcome: 'rotated', refreshToken: minted.token } : { outcome: 'revoked' };
      } catch (error) {
        // The rotation may have landed with its reply lost: rolled back while nobody has used
        // the successor, which was never delivered, so the client's retry works.
        await release(hold, minted.mac);
        throw error;
      }
    },
    revokeFamily: (familyId) => store.revokeFamily(familyId),
  };

  function release({ familyId, attempt, mac }: RefreshTokenHold, successorMac: string): Promise<void> {
    return store.release(familyId, attempt, { successorMac, previousMac: mac }).catch(() => undefined);
  }
}
