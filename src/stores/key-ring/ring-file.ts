import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type KeyRingKeys,
  type KeyRingState,
  type RefreshTokenMacKey,
  refreshTokenMacKeyId,
  type SigningKey,
  thumbprint,
} from '../../oauth/key-ring-store.ts';

/**
 * The format of a generation, `keyring-<n>.json`: what every deployment holds, so its members
 * keep their names. In each list the first key is the current one: it signs (mints); the
 * others only verify. A generation that has been emptied holds `{"replacedBy": <newer n>}`.
 */
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
  /**
   * The refresh-token MAC keys. The first versions called them encryption keys, wrongly (they
   * only ever compute HMACs); the member keeps that name so that every ring written reads.
   */
  encryption: {
    id: string;
    createdAt: string;
    supersededAt?: string;
    /** 32 random bytes, base64. */
    key: string;
  }[];
}

export const RING_FILE = /^keyring-(\d{1,12})\.json$/;
export const ringFileName = (generation: number) => `keyring-${generation}.json`;
export const ringFileText = (file: KeyRingFile) => `${JSON.stringify(file, null, 2)}\n`;
export const emptiedFileText = (replacedBy: number) => `${JSON.stringify({ replacedBy })}\n`;
export const isEmptied = (text: string) => text.includes('"replacedBy"');

/** The generation in force: the highest ring file, or 0 when there is none (legacy or empty). */
export async function newestGeneration(dir: string): Promise<number> {
  let newest = 0;
  for (const name of await listDir(dir)) {
    const match = RING_FILE.exec(name);
    if (match) newest = Math.max(newest, Number(match[1]));
  }
  return newest;
}

/** The generation read has been replaced by a newer one since it was listed. */
export class Replaced extends Error {}

export async function readGeneration(dir: string, generation: number): Promise<KeyRingState> {
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

/**
 * Parses and checks a ring: RSA keys of at least 2048 bits whose `kid` is their thumbprint,
 * a current key whose private half matches its public one, HMAC keys of 32 bytes whose id
 * is derived from them. `where` names the file in messages. An id of '' (the legacy files)
 * is derived rather than checked.
 */
export function checkRing(where: string, generation: number, file: KeyRingFile): KeyRingState {
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
  const refreshTokenMac = file.encryption.map((entry, index): RefreshTokenMacKey => {
    const key = Buffer.from(String(entry.key), 'base64');
    if (key.length < 32) fail(`encryption key ${entry.id} must hold 32 base64 bytes`);
    const id = refreshTokenMacKeyId(key);
    if (entry.id !== '' && entry.id !== id) fail(`encryption key ${entry.id} is not the key its id names`);
    return { id, key, ...dates(entry, index, 'encryption') };
  });
  for (const ids of [signing.map((key) => key.kid), refreshTokenMac.map((key) => key.id)]) {
    if (new Set(ids).size !== ids.length) fail('a key is listed twice');
  }
  const [current, ...earlierSigning] = signing;
  const [currentMac, ...earlierMac] = refreshTokenMac;
  if (!current) return fail('no signing key');
  if (!currentMac) return fail('no encryption key');
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
    refreshTokenMac: [currentMac, ...earlierMac],
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

/** The file of a ring: what `checkRing` reads back. */
export function toFile({ signing, refreshTokenMac }: KeyRingKeys): KeyRingFile {
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
    encryption: refreshTokenMac.map((key) => ({
      id: key.id,
      createdAt: key.createdAt.toISOString(),
      ...(key.supersededAt ? { supersededAt: key.supersededAt.toISOString() } : {}),
      key: key.key.toString('base64'),
    })),
  };
}

export async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
