import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The three key files every worker and node must share: an RSA pair that signs access tokens
 * and the HMAC key under which refresh tokens are stored. Different files on another node
 * mean that node rejects our tokens; new files invalidate every token issued so far.
 */
export interface KeySet {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** RFC 7638 thumbprint of the public key, sent as the JWT `kid`. */
  keyId: string;
  encryptionKey: Buffer;
}

export const KEY_FILES = {
  private: 'private.key',
  public: 'public.key',
  encryption: 'encryption.key',
} as const;

export class KeyFilesExist extends Error {
  constructor(dir: string) {
    super(
      `Key files already exist in ${dir}; pass --force to replace them (this invalidates every issued token)`,
    );
    this.name = 'KeyFilesExist';
  }
}

function generateKeyMaterial(): Record<keyof typeof KEY_FILES, string> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { private: privateKey, public: publicKey, encryption: `${randomBytes(32).toString('base64')}\n` };
}

/**
 * Writes a fresh key set. Without `force` it refuses when any key file exists. Each file is
 * first written under a temporary name and then hard-linked into place, which fails if the
 * target exists: two processes racing here can never both win, and nobody reads a half file.
 */
export async function generateKeyFiles(dir: string, options: { force: boolean }): Promise<void> {
  await mkdir(dir, { recursive: true });
  const material = generateKeyMaterial();
  const written: string[] = [];
  try {
    for (const [name, file] of Object.entries(KEY_FILES) as [keyof typeof KEY_FILES, string][]) {
      const target = join(dir, file);
      const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      await writeFile(temporary, material[name], { mode: name === 'public' ? 0o644 : 0o600 });
      try {
        if (options.force) await unlink(target).catch(() => undefined);
        await link(temporary, target);
        written.push(target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new KeyFilesExist(dir);
        throw error;
      } finally {
        await unlink(temporary).catch(() => undefined);
      }
    }
  } catch (error) {
    // Never leave a partial set behind that would not match its other half.
    if (!options.force) for (const target of written) await unlink(target).catch(() => undefined);
    throw error;
  }
}

/**
 * Generates the key files unless all of them are already there. Returns true when it wrote
 * them. A partial set may be another container finishing its write on a shared volume, so it
 * is given a few seconds to complete before it is reported as broken.
 */
export async function ensureKeyFiles(dir: string, settleMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const present = Object.values(KEY_FILES).filter((file) => existsSync(join(dir, file)));
    if (present.length === Object.keys(KEY_FILES).length) return false;
    if (present.length === 0) break;
    if (Date.now() >= deadline) {
      throw new Error(
        `Incomplete key set in ${dir} (found only ${present.join(', ')}); restore it or run keys:generate --force`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  try {
    await generateKeyFiles(dir, { force: false });
    return true;
  } catch (error) {
    // Another process won the race; wait for its set to be complete.
    if (error instanceof KeyFilesExist) return ensureKeyFiles(dir, settleMs).then(() => false);
    throw error;
  }
}

export function loadKeySet(dir: string): KeySet {
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  const privateKey = createPrivateKey(read(KEY_FILES.private));
  const publicKey = createPublicKey(read(KEY_FILES.public));
  if (
    privateKey.asymmetricKeyType !== 'rsa' ||
    (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048
  ) {
    throw new Error(`${join(dir, KEY_FILES.private)} must be an RSA key of at least 2048 bits`);
  }
  const derived = createPublicKey(privateKey).export({ format: 'jwk' });
  const loaded = publicKey.export({ format: 'jwk' });
  if (derived.n !== loaded.n || derived.e !== loaded.e) {
    throw new Error(`${KEY_FILES.public} does not belong to ${KEY_FILES.private} in ${dir}`);
  }
  const encryptionKey = Buffer.from(read(KEY_FILES.encryption).trim(), 'base64');
  if (encryptionKey.length < 32)
    throw new Error(`${join(dir, KEY_FILES.encryption)} must hold 32 base64 bytes`);
  return { privateKey, publicKey, keyId: thumbprint(loaded), encryptionKey };
}

/** RFC 7638: SHA-256 over the required RSA members in lexicographic order, base64url. */
function thumbprint(jwk: { e?: string; n?: string }): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n }))
    .digest('base64url');
}
