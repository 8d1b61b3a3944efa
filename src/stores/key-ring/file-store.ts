import { type KeyRingState, type KeyRingStore, NoKeys } from '../../oauth/key-ring-store.ts';
import { commit } from './commit.ts';
import { readLegacy } from './legacy-files.ts';
import { newestGeneration, Replaced, readGeneration } from './ring-file.ts';

/**
 * The key ring on disk: the RSA key pairs that sign and verify access tokens, and the
 * refresh-token MAC keys. Every worker and node reads the same KEYS_DIR.
 *
 * Layout: one file per generation, `keyring-<n>.json` (mode 0600); the highest `n` is the ring
 * in force. A change (generate, rotate, retire) writes generation n + 1 under a temporary name
 * and hard-links it into place, which fails when that name exists: of two writers racing, one
 * wins and the other starts again from the winner's ring, so no change is lost and no reader
 * ever sees half a ring. An older generation is then emptied in place (it held a private key
 * that no longer signs) but keeps its name, so that its number can never be taken again by a
 * writer that read it long ago.
 *
 * Before rings existed the directory held three files, `private.key`, `public.key` and
 * `encryption.key`. Such a directory is read as generation 0, so a deployment upgrades without
 * signing anyone out; the first change folds those keys into `keyring-1.json` and removes them.
 */

/** The key ring kept in `dir` (KEYS_DIR). */
export function fileKeyRingStore(dir: string): KeyRingStore {
  return {
    location: dir,
    newestGeneration: () => newestGeneration(dir),
    async read() {
      const ring = await readNewest(dir);
      if (!ring) throw new NoKeys(dir);
      return ring;
    },
    commit: (change) => commit(dir, change),
  };
}

/**
 * The ring in force, or undefined when there is none. A writer may replace the generation we
 * are about to read (it has just committed a newer one): then we look again.
 */
async function readNewest(dir: string): Promise<KeyRingState | undefined> {
  for (let attempt = 1; ; attempt++) {
    const generation = await newestGeneration(dir);
    try {
      return generation === 0 ? await readLegacy(dir) : await readGeneration(dir, generation);
    } catch (error) {
      if (!(error instanceof Replaced) || attempt >= 5) throw error;
    }
  }
}
