import type { KeyObject } from 'node:crypto';
import type { AccessTokenKeys } from './access-token.ts';
import type { KeyRingState, KeyRingStore } from './key-ring-store.ts';

/**
 * The refresh-token MAC keys: the current one makes the MAC of new tokens, every other one
 * still verifies the tokens made under it until it is retired.
 */
export interface RefreshTokenMacKeys {
  current(): { id: string; key: Buffer };
  byId(id: string): Buffer | undefined;
}

/** The keys in force in this process, following the key ring store as it changes. */
export interface KeyRing extends AccessTokenKeys {
  readonly refreshTokenMacKeys: RefreshTokenMacKeys;
  /** Stops following the directory. */
  close(): void;
}

/** How often each process looks for a newer generation of the ring. */
export const KEY_RING_RELOAD_MS = 2_000;

/**
 * Reads the ring in force, then polls the store for a newer generation and switches to it:
 * every worker of every node follows `keys:rotate` and `keys:retire` within a couple of
 * seconds, without a restart or a signal. Polling rather than fs.watch: watching is unreliable
 * on network and overlay volumes, and a poll is one directory listing. A generation that cannot
 * be read is reported and the keys in force are kept.
 */
export async function openKeyRing(
  store: KeyRingStore,
  options: { log?: (message: string) => void; reloadMs?: number } = {},
): Promise<KeyRing> {
  const log = options.log ?? (() => {});
  let keys = indexed(await store.read());
  let checking = false;
  let failing = false;

  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      if ((await store.newestGeneration()) === keys.generation) return;
      keys = indexed(await store.read());
      failing = false;
      log(`Key ring generation ${keys.generation} in force (signing key ${keys.signing.kid})`);
    } catch (error) {
      if (!failing)
        log(
          `Key ring in ${store.location} unreadable, keeping generation ${keys.generation}: ${(error as Error).message}`,
        );
      failing = true;
    } finally {
      checking = false;
    }
  }, options.reloadMs ?? KEY_RING_RELOAD_MS);
  timer.unref();

  return {
    signingKey: () => keys.signing,
    verificationKey: (kid) => keys.verification.get(kid),
    refreshTokenMacKeys: {
      current: () => keys.refreshTokenMac,
      byId: (id) => keys.refreshTokenMacById.get(id),
    },
    close: () => clearInterval(timer),
  };
}

/** A generation, arranged for lookups by id. */
function indexed(ring: KeyRingState) {
  const [signing] = ring.signing;
  const [refreshTokenMac] = ring.refreshTokenMac;
  return {
    generation: ring.generation,
    signing: { privateKey: signing.privateKey, kid: signing.kid },
    verification: new Map<string, KeyObject>(ring.signing.map((key) => [key.kid, key.publicKey])),
    refreshTokenMac: { id: refreshTokenMac.id, key: refreshTokenMac.key },
    refreshTokenMacById: new Map<string, Buffer>(ring.refreshTokenMac.map((key) => [key.id, key.key])),
  };
}
