import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeyRingKeys, KeyRingState } from '../../oauth/key-ring-store.ts';
import { LEGACY_FILES, readLegacy } from './legacy-files.ts';
import {
  checkRing,
  emptiedFileText,
  isEmptied,
  type KeyRingFile,
  listDir,
  newestGeneration,
  Replaced,
  RING_FILE,
  readGeneration,
  ringFileName,
  ringFileText,
  toFile,
} from './ring-file.ts';

/**
 * Writes generation n + 1 from generation n (`current` reads it, for a change that needs it).
 * The new generation is checked before it is written. Linking fails when another writer took
 * n + 1 first: then the change is made again on top of theirs. Afterwards the older
 * generations are emptied and the legacy files removed.
 */
export async function commit(
  dir: string,
  change: (current: () => Promise<KeyRingState | undefined>) => Promise<KeyRingKeys>,
): Promise<KeyRingState> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 1; attempt <= 20; attempt++) {
    const base = await newestGeneration(dir);
    let next: KeyRingFile;
    try {
      next = toFile(await change(() => (base === 0 ? readLegacy(dir) : readGeneration(dir, base))));
    } catch (error) {
      // Another writer replaced generation `base` while we read it.
      if (error instanceof Replaced) continue;
      throw error;
    }
    const generation = base + 1;
    const target = join(dir, ringFileName(generation));
    const written = checkRing(target, generation, next);
    const temporary = temporaryPath(target);
    await writeFile(temporary, ringFileText(next), { mode: 0o600 });
    try {
      await link(temporary, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    } finally {
      await unlink(temporary).catch(() => undefined);
    }
    await emptySuperseded(dir, generation);
    return written;
  }
  throw new Error(`The key ring in ${dir} kept changing under us; try again`);
}

/**
 * Empties every older generation that still holds keys, and removes the legacy files. An
 * emptied generation is replaced whole (rename), so a reader sees either the keys or the marker.
 */
async function emptySuperseded(dir: string, generation: number): Promise<void> {
  for (const name of await listDir(dir)) {
    const match = RING_FILE.exec(name);
    const path = join(dir, name);
    if ((LEGACY_FILES as readonly string[]).includes(name)) await unlink(path).catch(() => undefined);
    if (!match || Number(match[1]) >= generation) continue;
    if (isEmptied(await readFile(path, 'utf8'))) continue;
    const temporary = temporaryPath(path);
    await writeFile(temporary, emptiedFileText(generation), { mode: 0o600 });
    await rename(temporary, path);
  }
}

/** Where a file is written before it takes its name: beside it, unique to this process and write. */
export function temporaryPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}
