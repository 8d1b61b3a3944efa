import { createSecretKey, type KeyObject } from 'node:crypto';
import type { AccessTokenKeys } from './access-token.ts';
import type { KeyRingState, KeyRingStore } from './key-ring-store.ts';

/**
 * The refresh-token MAC keys: the current one makes the MAC of new tokens, every other one
 * still verifies the tokens made under it until it is retired.
 */
export interface RefreshTokenMacKeys {
  current(): { id: string; key: KeyObject };
  /** The key with that id, from a newer generation if this process is behind; else undefined. */
  find(id: string): Promise<KeyObject | undefined>;
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
 *
 * Processes poll at different moments, so for up to a poll interval after a change some
 * already sign with the new keys while others do not know them yet: a key id this process does
 * not know makes it look for a newer generation at once, so that a token or a sign-in form
 * made by a process a poll ahead is not refused. (An unknown id costs a directory listing.)
 */
export async function openKeyRing(
  store: KeyRingStore,
  options: { log?: (message: string) => void; reloadMs?: number } = {},
): Promise<KeyRing> {
  const log = options.log ?? (() => {});
  let keys = indexed(await store.read());
  let reading: Promise<void> | undefined;
  let checking = false;
  let failing = false;

  /** Reads the generation in force and switches to it; concurrent callers share one read. */
  function read(): Promise<void> {
    reading ??= store
      .read()
      .then((ring) => {
        keys = indexed(ring);
        log(`Key ring generation ${keys.generation} in force (signing key ${keys.signing.kid})`);
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  }

  /** Switches to the generation in force when it is another one. */
  async function follow(): Promise<void> {
    const newest = await store.newestGeneration();
    if (newest === keys.generation) return;
    await read();
    // The read shared may have begun before generation `newest` was written: then another.
    if (keys.generation < newest) await read();
  }

  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      await follow();
      failing = false;
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

  /** What `lookUp` finds in the keys in force, or else in the generation in force now. */
  async function catchingUp<T>(lookUp: () => T | undefined): Promise<T | undefined> {
    const found = lookUp();
    if (found !== undefined) return found;
    // A ring that cannot be read is the poll's to report; the key stays unknown.
    await follow().catch(() => undefined);
    return lookUp();
  }

  return {
    signingKey: () => keys.signing,
    verificationKey: (kid) => keys.verification.get(kid),
    findVerificationKey: (kid) => catchingUp(() => keys.verification.get(kid)),
    refreshTokenMacKeys: {
      current: () => keys.refreshTokenMac,
      find: (id) => catchingUp(() => keys.refreshTokenMacById.get(id)),
    },
    close: () => clearInterval(timer),
  };
}

/**
 * A generation, arranged for lookups by id. The MAC keys become KeyObjects here, once: given
 * a Buffer, `createHmac` prepares the key anew on every call, which in Node 24 costs several
 * times the HMAC itself, twice per refresh.
 */
function indexed(ring: KeyRingState) {
  const [signing] = ring.signing;
  const [refreshTokenMac] = ring.refreshTokenMac;
  return {
    generation: ring.generation,
    signing: { privateKey: signing.privateKey, kid: signing.kid },
    verification: new Map<string, KeyObject>(ring.signing.map((key) => [key.kid, key.publicKey])),
    refreshTokenMac: { id: refreshTokenMac.id, key: createSecretKey(refreshTokenMac.key) },
    refreshTokenMacById: new Map<string, KeyObject>(
      ring.refreshTokenMac.map((key) => [key.id, createSecretKey(key.key)]),
    ),
  };
}
