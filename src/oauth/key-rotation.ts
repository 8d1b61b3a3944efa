import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  type KeyRingKeys,
  type KeyRingState,
  type KeyRingStore,
  NoKeys,
  type RefreshTokenMacKey,
  refreshTokenMacKeyId,
  type SigningKey,
  thumbprint,
} from './key-ring-store.ts';

/**
 * How the key ring changes: a fresh ring, a rotation that signs nobody out, and the
 * retirement of earlier keys once nothing they made can still be alive. Each change is one
 * commit of the store, so concurrent changes from several nodes are all kept.
 */

export class KeyRingExists extends Error {
  constructor(location: string) {
    super(
      `Keys already exist in ${location}; pass --force to replace them (this invalidates every issued token)`,
    );
    this.name = 'KeyRingExists';
  }
}

/**
 * Writes a fresh ring: one new signing key and one new refresh-token MAC key. Without `force` it
 * refuses when any keys exist; with it, every earlier key is dropped at once.
 */
export async function generateKeys(store: KeyRingStore, options: { force: boolean }): Promise<KeyRingState> {
  return store.commit(async (current) => {
    if (!options.force && (await current())) throw new KeyRingExists(store.location);
    const now = new Date();
    return { signing: [newSigningKey(now)], refreshTokenMac: [newRefreshTokenMacKey(now)] };
  });
}

/**
 * Generates keys unless the store has some. Returns true when it wrote them. Nodes
 * starting at once on a shared directory race here: exactly one writes, the others use its ring.
 */
export async function ensureKeys(store: KeyRingStore): Promise<boolean> {
  try {
    await generateKeys(store, { force: false });
    return true;
  } catch (error) {
    if (error instanceof KeyRingExists) return false;
    throw error;
  }
}

/**
 * A new signing key and a new refresh-token MAC key become current; the previous ones keep
 * verifying until they are retired. The previous private key is dropped: it never signs again.
 */
export async function rotateKeys(store: KeyRingStore, now = new Date()): Promise<KeyRingState> {
  return store.commit(async (current) => {
    const ring = await current();
    if (!ring) throw new NoKeys(store.location);
    return {
      signing: [
        newSigningKey(now),
        ...ring.signing.map(
          (key): SigningKey => ({
            kid: key.kid,
            createdAt: key.createdAt,
            supersededAt: key.supersededAt ?? now,
            publicKey: key.publicKey,
          }),
        ),
      ],
      refreshTokenMac: [
        newRefreshTokenMacKey(now),
        ...ring.refreshTokenMac.map((key) => ({ ...key, supersededAt: key.supersededAt ?? now })),
      ],
    };
  });
}

/**
 * Which earlier keys to retire. `expired`: those whose every token has expired, i.e.
 * superseded longer ago than the lifetime of the tokens they made (plus a margin for clocks
 * and for nodes that signed a little longer before they reloaded): nobody is signed out.
 * `all`: every key that is not current (for a key that leaked). `id`: one earlier key.
 */
export type RetireSelection =
  | { kind: 'expired'; accessTokenTtlSeconds: number; refreshTokenTtlSeconds: number; now?: Date }
  | { kind: 'all' }
  | { kind: 'id'; id: string };

/** How much longer than a token's lifetime an expired key is kept. */
export const RETIRE_MARGIN_MS = 5 * 60_000;

/** Removes earlier keys; returns the ids it removed and the ring now in force. */
export async function retireKeys(
  store: KeyRingStore,
  selection: RetireSelection,
): Promise<{ retired: string[]; ring: KeyRingState }> {
  let retired: string[] = [];
  const ring = await store
    .commit(async (current) => {
      const state = await current();
      if (!state) throw new NoKeys(store.location);
      const isRetired = retirement(selection, state);
      const [signing, ...earlierSigning] = state.signing;
      const [refreshTokenMac, ...earlierMac] = state.refreshTokenMac;
      const retiredSigning = earlierSigning.filter((key) => isRetired('signing', key.kid));
      const retiredMac = earlierMac.filter((key) => isRetired('refreshTokenMac', key.id));
      retired = [...retiredSigning.map((key) => key.kid), ...retiredMac.map((key) => key.id)];
      if (retired.length === 0) throw new NothingToRetire();
      return {
        signing: [signing, ...earlierSigning.filter((key) => !retiredSigning.includes(key))],
        refreshTokenMac: [refreshTokenMac, ...earlierMac.filter((key) => !retiredMac.includes(key))],
      } satisfies KeyRingKeys;
    })
    .catch(async (error: unknown) => {
      if (error instanceof NothingToRetire) return store.read();
      throw error;
    });
  return { retired, ring };
}

class NothingToRetire extends Error {}

function retirement(
  selection: RetireSelection,
  state: KeyRingState,
): (kind: 'signing' | 'refreshTokenMac', id: string) => boolean {
  switch (selection.kind) {
    case 'all':
      return () => true;
    case 'id': {
      const [signing] = state.signing;
      const [refreshTokenMac] = state.refreshTokenMac;
      if (selection.id === signing.kid || selection.id === refreshTokenMac.id)
        throw new Error(`${selection.id} is a current key; run keys:rotate first, then retire it`);
      const known = [...state.signing.map((key) => key.kid), ...state.refreshTokenMac.map((key) => key.id)];
      if (!known.includes(selection.id)) throw new Error(`No key ${selection.id} in the ring`);
      return (_, id) => id === selection.id;
    }
    case 'expired': {
      const now = (selection.now ?? new Date()).getTime();
      const lifetime = {
        signing: selection.accessTokenTtlSeconds * 1000,
        refreshTokenMac: selection.refreshTokenTtlSeconds * 1000,
      };
      const superseded = new Map<string, Date | undefined>([
        ...state.signing.map((key) => [key.kid, key.supersededAt] as const),
        ...state.refreshTokenMac.map((key) => [key.id, key.supersededAt] as const),
      ]);
      return (kind, id) => {
        const since = superseded.get(id);
        return since !== undefined && now - since.getTime() >= lifetime[kind] + RETIRE_MARGIN_MS;
      };
    }
  }
}

/** RSA, 2048 bits: the signing key every RS and PS algorithm the service pins can use. */
function newSigningKey(createdAt: Date): KeyRingKeys['signing'][0] {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: thumbprint(publicKey), createdAt, privateKey, publicKey };
}

/** 256 random bits, the size of the HMAC-SHA256 output. */
function newRefreshTokenMacKey(createdAt: Date): RefreshTokenMacKey {
  const key = randomBytes(32);
  return { id: refreshTokenMacKeyId(key), createdAt, key };
}
