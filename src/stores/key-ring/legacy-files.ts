import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeyRingState } from '../../oauth/key-ring-store.ts';
import { checkRing, listDir, Replaced } from './ring-file.ts';

/** The files of earlier versions, read as generation 0. */
export const LEGACY_FILES = ['private.key', 'public.key', 'encryption.key'] as const;

/** The three files of earlier versions; undefined when none is there. */
export async function readLegacy(dir: string): Promise<KeyRingState | undefined> {
  const names = await listDir(dir);
  const present = LEGACY_FILES.filter((file) => names.includes(file));
  if (present.length === 0) return undefined;
  if (present.length < LEGACY_FILES.length) {
    throw new Error(
      `Incomplete key set in ${dir} (found only ${present.join(', ')}); restore it or run keys:generate --force`,
    );
  }
  let privatePem: string | undefined;
  let publicPem: string | undefined;
  let refreshTokenMac: string | undefined;
  let createdAt: string;
  try {
    [privatePem, publicPem, refreshTokenMac] = await Promise.all(
      LEGACY_FILES.map((file) => readFile(join(dir, file), 'utf8')),
    );
    createdAt = (await stat(join(dir, 'private.key'))).mtime.toISOString();
  } catch (error) {
    // Folded into keyring-1.json by a writer since we listed the directory.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Replaced();
    throw error;
  }
  // The files carry no ids: '' asks checkRing to derive them.
  return checkRing(dir, 0, {
    signing: [{ kid: '', createdAt, privateKey: privatePem, publicKey: publicPem ?? '' }],
    encryption: [{ id: '', createdAt, key: (refreshTokenMac ?? '').trim() }],
  });
}
