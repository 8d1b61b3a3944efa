import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { chmod, link, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

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
interface KeyRingFile {
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

export interface SigningKey {
  kid: string;
  createdAt: Date;
  supersededAt?: Date;
  publicKey: KeyObject;
  /** Present on the current key only. */
  privateKey?: KeyObject;
}

export interface EncryptionKey {
  id: string;
  createdAt: Date;
  supersededAt?: Date;
  key: Buffer;
}

/** A generation of the ring, read and checked. The first key of each list is the current one. */
export interface KeyRingState {
  /** 0 for the three files of earlier versions. */
  generation: number;
  signing: readonly [SigningKey & { privateKey: KeyObject }, ...SigningKey[]];
  encryption: readonly [EncryptionKey, ...EncryptionKey[]];
}

/** The files of earlier versions, read as generation 0. */
export const LEGACY_FILES = ['private.key', 'public.key', 'encryption.key'] as const;
const RING_FILE = /^keyring-(\d{1,12})\.json$/;
const ringFileName = (generation: number) => `keyring-${generation}.json`;

export class KeyFilesExist extends Error {
  constructor(dir: string) {
    super(`Keys already exist in ${dir}; pass --force to replace them (this invalidates every issued token)`);
    this.name = 'KeyFilesExist';
  }
}

export class NoKeys extends Error {
  constructor(dir: string) {
    super(`No keys in ${dir}; run keys:generate`);
    this.name = 'NoKeys';
  }
}

/**
 * The id of a refresh-token HMAC key, derived from its bytes so that every node computes the
 * same id for the same key (6 bytes of SHA-256, base64url).
 */
export function encryptionKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 8);
}

/** RFC 7638: SHA-256 over the required RSA members in lexicographic order, base64url. */
export function thumbprint(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' });
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n }))
    .digest('base64url');
}

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
 * Writes a fresh ring: one new signing key and one new encryption key. Without `force` it
 * refuses when any keys exist; with it, every earlier key is dropped at once.
 */
export async function generateKeyFiles(dir: string, options: { force: boolean }): Promise<void> {
  await commit(dir, async (current) => {
    if (!options.force && (await current())) throw new KeyFilesExist(dir);
    const now = new Date().toISOString();
    return { signing: [newSigningKey(now)], encryption: [newEncryptionKey(now)] };
  });
}

/**
 * Generates keys unless the directory has some. Returns true when it wrote them. Nodes
 * starting at once on a shared directory race here: exactly one writes, the others use its ring.
 */
export async function ensureKeyFiles(dir: string): Promise<boolean> {
  try {
    await generateKeyFiles(dir, { force: false });
    return true;
  } catch (error) {
    if (error instanceof KeyFilesExist) return false;
    throw error;
  }
}

/**
 * A new signing key and a new encryption key become current; the previous ones keep
 * verifying until they are retired. The previous private key is dropped: it never signs again.
 */
export async function rotateKeys(dir: string, now = new Date()): Promise<KeyRingState> {
  const at = now.toISOString();
  return commit(dir, async (current) => {
    const ring = await current();
    if (!ring) throw new NoKeys(dir);
    const earlier = toFile(
      ring.signing.map((key) =>
        key.supersededAt ? key : { ...key, privateKey: undefined, supersededAt: now },
      ),
      ring.encryption.map((key) => (key.supersededAt ? key : { ...key, supersededAt: now })),
    );
    return {
      signing: [newSigningKey(at), ...earlier.signing],
      encryption: [newEncryptionKey(at), ...earlier.encryption],
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
  dir: string,
  selection: RetireSelection,
): Promise<{ retired: string[]; ring: KeyRingState }> {
  let retired: string[] = [];
  const ring = await commit(dir, async (current) => {
    const state = await current();
    if (!state) throw new NoKeys(dir);
    const isRetired = retirement(selection, state);
    const file = toFile(state.signing, state.encryption);
    const keep = {
      signing: file.signing.filter((key, index) => index === 0 || !isRetired('signing', key.kid)),
      encryption: file.encryption.filter((key, index) => index === 0 || !isRetired('encryption', key.id)),
    };
    retired = [
      ...file.signing.filter((key) => !keep.signing.includes(key)).map((key) => key.kid),
      ...file.encryption.filter((key) => !keep.encryption.includes(key)).map((key) => key.id),
    ];
    if (retired.length === 0) throw new NothingToRetire();
    return keep;
  }).catch(async (error: unknown) => {
    if (error instanceof NothingToRetire) return readKeyRing(dir);
    throw error;
  });
  return { retired, ring };
}

class NothingToRetire extends Error {}

function retirement(
  selection: RetireSelection,
  state: KeyRingState,
): (kind: 'signing' | 'encryption', id: string) => boolean {
  switch (selection.kind) {
    case 'all':
      return () => true;
    case 'id': {
      const [signing] = state.signing;
      const [encryption] = state.encryption;
      if (selection.id === signing.kid || selection.id === encryption.id)
        throw new Error(`${selection.id} is a current key; run keys:rotate first, then retire it`);
      const known = [...state.signing.map((key) => key.kid), ...state.encryption.map((key) => key.id)];
      if (!known.includes(selection.id)) throw new Error(`No key ${selection.id} in the ring`);
      return (_, id) => id === selection.id;
    }
    case 'expired': {
      const now = (selection.now ?? new Date()).getTime();
      const lifetime = {
        signing: selection.accessTokenTtlSeconds * 1000,
        encryption: selection.refreshTokenTtlSeconds * 1000,
      };
      const superseded = new Map<string, Date | undefined>([
        ...state.signing.map((key) => [key.kid, key.supersededAt] as const),
        ...state.encryption.map((key) => [key.id, key.supersededAt] as const),
      ]);
      return (kind, id) => {
        const since = superseded.get(id);
        return since !== undefined && now - since.getTime() >= lifetime[kind] + RETIRE_MARGIN_MS;
      };
    }
  }
}

/**
 * Writes generation n + 1 from generation n (`current` reads it, for a change that needs it).
 * Linking fails when another writer took n + 1 first: then the change is made again on top
 * of theirs. Afterwards the older generations are emptied and the legacy files removed.
 */
async function commit(
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
    const temporary = temporaryPath(target);
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
    const temporary = temporaryPath(path);
    await writeFile(temporary, `${JSON.stringify({ replacedBy: generation })}\n`, { mode: 0o600 });
    await rename(temporary, path);
  }
}

/** Where a file is written before it takes its name: beside it, unique to this process and write. */
export function temporaryPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
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

function toFile(signing: readonly SigningKey[], encryption: readonly EncryptionKey[]): KeyRingFile {
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

function newSigningKey(createdAt: string): KeyRingFile['signing'][number] {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    kid: thumbprint(publicKey),
    createdAt,
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function newEncryptionKey(createdAt: string): KeyRingFile['encryption'][number] {
  const key = randomBytes(32);
  return { id: encryptionKeyId(key), createdAt, key: key.toString('base64') };
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
