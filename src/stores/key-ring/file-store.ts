import { chmod, stat } from 'node:fs/promises';
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

/** What `secureKeyDirectory` did, or could not do, for the caller to log. */
export interface KeyDirectoryNotice {
  level: 'info' | 'warn';
  message: string;
}

/**
 * The key directory is the service's alone (0700): group or others who may enter it can read
 * any key file whose own mode someone loosened (a copy made with `cp`, a restored backup), and
 * watch the ring change. A directory the service owns is tightened to 0700; one it does not
 * own is left as it is (it is someone else's to manage) and named in a warning. Nothing to
 * say when the directory is private already or does not exist yet (commit creates it 0700).
 */
export async function secureKeyDirectory(dir: string): Promise<KeyDirectoryNotice | undefined> {
  let status: Awaited<ReturnType<typeof stat>>;
  try {
    status = await stat(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const mode = status.mode & 0o777;
  // No POSIX modes to speak of (Windows): nothing to check.
  if ((mode & 0o077) === 0 || process.getuid === undefined) return undefined;
  const octal = (value: number) => value.toString(8).padStart(4, '0');
  if (status.uid !== process.getuid()) {
    return {
      level: 'warn',
      message:
        `Key directory ${dir} is open to its group or others (mode ${octal(mode)}) and owned by another ` +
        `user, so it is left as it is: make it 0700 (chmod 700 ${dir})`,
    };
  }
  await chmod(dir, 0o700);
  return { level: 'info', message: `Tightened key directory ${dir} from ${octal(mode)} to 0700` };
}
