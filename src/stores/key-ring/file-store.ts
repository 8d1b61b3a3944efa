import { createPrivateKey, createPublicKey, type KeyObject, randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type EncryptionKey,
  encryptionKeyId,
  type KeyRingState,
  NoKeys,
  type SigningKey,
  thumbprint,
} from '../../oauth/key-ring-store.ts';

/**
 * The key ring on disk: the RSA key pairs that sign and verify access tokens, and the HMAC
 * keys under which refresh tokens are stored. Every worker and node reads the same KEYS_DIR.
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

/** In each list the first key is the current one: it signs (mints); the others only verify. */
export interface KeyRingFile {
  signing: {
    /** RFC 7638 thumbprint of the public key: the JWT `kid`. */
    kid: string;
    createdAt: string;
    /** When a newer key took over signing; absent for the current key. */
    supersededAt?: string;
    /** PKCS#8 PEM; only the current key keeps it, as no other will ever sign again. */
    privateKey?: string;
    /** SPKI PEM. */
    publicKey: string;
  }[];
  encryption: {
    id: string;
    createdAt: string;
    supersededAt?: string;
    /** 32 random bytes, base64. */
    key: string;
  }[];
}

/** The files of earlier versions, read as generation 0. */
export const LEGACY_FILES = ['private.key', 'public.key', 'encryption.key'] as const;
const RING_FILE = /^keyring-(\d{1,12})\.json$/;
const ringFileName = (generation: number) => `keyring-${generation}.json`;

// ---------------------------------------------------------------------------------------------
// Reading

/** The generation in force: the highest ring file, or 0 when there is none (legacy or empty). */
export async function newestGeneration(dir: string): Promise<number> {
  let newest = 0;
  for (const name of await listDir(dir)) {
    const match = RING_FILE.exec(name);
    if (match) newest = Math.max(newest, Number(match[1]));
  }
  return newest;
}

/** Reads the ring in force; throws NoKeys when the directory holds none. */
export async function readKeyRing(dir: string): Promise<KeyRingState> {
  const ring = await readNewest(dir);
  if (!ring) throw new NoKeys(dir);
  return ring;
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

/** The generation read has been replaced by a newer one since it was listed. */
class Replaced extends Error {}

async function readGeneration(dir: string, generation: number): Promise<KeyRingState> {
  const path = join(dir, ringFileName(generation));
  let file: KeyRingFile | { replacedBy: number };
  try {
    file = JSON.parse(await readFile(path, 'utf8')) as KeyRingFile;
  } catch (error) {
    if (error instanceof SyntaxError) throw new Error(`${path} is not valid JSON`);
    throw error;
  }
  if ('replacedBy' in file) throw new Replaced();
  return checkRing(path, generation, file);
}

/** The three files of earlier versions; undefined when none is there. */
async function readLegacy(dir: string): Promise<KeyRingState | undefined> {
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
  let encryption: string | undefined;
  let createdAt: string;
  try {
    [privatePem, publicPem, encryption] = await Promise.all(
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
    encryption: [{ id: '', createdAt, key: (encryption ?? '').trim() }],
  });
}

/**
 * Parses and checks a ring: RSA keys of at least 2048 bits whose `kid` is their thumbprint,
 * a current key whose private half matches its public one, HMAC keys of 32 bytes whose id
 * is derived from them. `where` names the file in messages. An id of '' (the legacy files)
 * is derived rather than checked.
 */
function checkRing(where: string, generation: number, file: KeyRingFile): KeyRingState {
  const fail = (message: string): never => {
    throw new Error(`${where}: ${message}`);
  };
  const dates = (entry: { createdAt: string; supersededAt?: string }, index: number, what: string) => {
    if ((index === 0) !== (entry.supersededAt === undefined))
      fail(`the first ${what} key, and only it, is the current one`);
    const createdAt = parseDate(entry.createdAt) ?? fail(`a ${what} key has no valid createdAt`);
    if (entry.supersededAt === undefined) return { createdAt };
    return { createdAt, supersededAt: parseDate(entry.supersededAt) ?? fail(`invalid supersededAt`) };
  };
  if (!Array.isArray(file?.signing) || !Array.isArray(file?.encryption)) fail('not a key ring');
  const signing = file.signing.map((entry, index): SigningKey => {
    const publicKey = parseKey(() => createPublicKey(entry.publicKey), `signing key ${index}`, fail);
    if (publicKey.asymmetricKeyType !== 'rsa' || (publicKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
      fail(`signing key ${entry.kid} must be an RSA key of at least 2048 bits`);
    const kid = thumbprint(publicKey);
    if (entry.kid !== '' && entry.kid !== kid) fail(`signing key ${entry.kid} is not the key its kid names`);
    return { kid, publicKey, ...dates(entry, index, 'signing') };
  });
  const encryption = file.encryption.map((entry, index): EncryptionKey => {
    const key = Buffer.from(String(entry.key), 'base64');
    if (key.length < 32) fail(`encryption key ${entry.id} must hold 32 base64 bytes`);
    const id = encryptionKeyId(key);
    if (entry.id !== '' && entry.id !== id) fail(`encryption key ${entry.id} is not the key its id names`);
    return { id, key, ...dates(entry, index, 'encryption') };
  });
  for (const ids of [signing.map((key) => key.kid), encryption.map((key) => key.id)]) {
    if (new Set(ids).size !== ids.length) fail('a key is listed twice');
  }
  const [current, ...earlierSigning] = signing;
  const [currentEncryption, ...earlierEncryption] = encryption;
  if (!current) return fail('no signing key');
  if (!currentEncryption) return fail('no encryption key');
  const privateKey = parseKey(
    () => createPrivateKey(file.signing[0]?.privateKey ?? ''),
    'the private key',
    fail,
  );
  if (thumbprint(createPublicKey(privateKey)) !== current.kid)
    fail(`the private key does not belong to signing key ${current.kid}`);
  return {
    generation,
    signing: [{ ...current, privateKey }, ...earlierSigning],
    encryption: [currentEncryption, ...earlierEncryption],
  };
}

function parseKey(parse: () => KeyObject, what: string, fail: (message: string) => never): KeyObject {
  try {
    return parse();
  } catch {
    return fail(`${what} is not a PEM key`);
  }
}

function parseDate(value: unknown): Date | undefined {
  const parsed = new Date(String(value));
  return Number.isNaN(parsed.getTime()) ? undefined : parsed;
}

// ---------------------------------------------------------------------------------------------
// Changing

/**
 * Writes generation n + 1 from generation n (`current` reads it, for a change that needs it).
 * Linking fails when another writer took n + 1 first: then the change is made again on top
 * of theirs. Afterwards the older generations are emptied and the legacy files removed.
 */
export async function commit(
  dir: string,
  change: (current: () => Promise<KeyRingState | undefined>) => Promise<KeyRingFile>,
): Promise<KeyRingState> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 1; attempt <= 20; attempt++) {
    const base = await newestGeneration(dir);
    let next: KeyRingFile;
    try {
      next = await change(() => (base === 0 ? readLegacy(dir) : readGeneration(dir, base)));
    } catch (error) {
      // Another writer replaced generation `base` while we read it.
      if (error instanceof Replaced) continue;
      throw error;
    }
    const generation = base + 1;
    const target = join(dir, ringFileName(generation));
    const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    try {
      await link(temporary, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    } finally {
      await unlink(temporary).catch(() => undefined);
    }
    await emptySuperseded(dir, generation);
    return checkRing(target, generation, next);
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
    if ((await readFile(path, 'utf8')).includes('"replacedBy"')) continue;
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, `${JSON.stringify({ replacedBy: generation })}\n`, { mode: 0o600 });
    await rename(temporary, path);
  }
}

export function toFile(signing: readonly SigningKey[], encryption: readonly EncryptionKey[]): KeyRingFile {
  return {
    signing: signing.map((key) => ({
      kid: key.kid,
      createdAt: key.createdAt.toISOString(),
      ...(key.supersededAt ? { supersededAt: key.supersededAt.toISOString() } : {}),
      ...(key.privateKey
        ? { privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }
        : {}),
      publicKey: key.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    })),
    encryption: encryption.map((key) => ({
      id: key.id,
      createdAt: key.createdAt.toISOString(),
      ...(key.supersededAt ? { supersededAt: key.supersededAt.toISOString() } : {}),
      key: key.key.toString('base64'),
    })),
  };
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
