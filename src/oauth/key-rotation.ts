import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { commit } from '../stores/key-ring/commit.ts';
import { readKeyRing } from '../stores/key-ring/file-store.ts';
import { type KeyRingFile, toFile } from '../stores/key-ring/ring-file.ts';
import { type KeyRingState, NoKeys, refreshTokenMacKeyId, thumbprint } from './key-ring-store.ts';

export class KeyFilesExist extends Error {
  constructor(dir: string) {
    super(`Keys already exist in ${dir}; pass --force to replace them (this invalidates every issued token)`);
    this.name = 'KeyFilesExist';
  }
}

/**
 * Writes a fresh ring: one new signing key and one new refresh-token MAC key. Without `force` it
 * refuses when any keys exist; with it, every earlier key is dropped at once.
 */
export async function generateKeyFiles(dir: string, options: { force: boolean }): Promise<void> {
  await commit(dir, async (current) => {
    if (!options.force && (await current())) throw new KeyFilesExist(dir);
    const now = new Date().toISOString();
    return { signing: [newSigningKey(now)], encryption: [newRefreshTokenMacKey(now)] };
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
 * A new signing key and a new refresh-token MAC key become current; the previous ones keep
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
      ring.refreshTokenMac.map((key) => (key.supersededAt ? key : { ...key, supersededAt: now })),
    );
    return {
      signing: [newSigningKey(at), ...earlier.signing],
      encryption: [newRefreshTokenMacKey(at), ...earlier.encryption],
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
    const file = toFile(state.signing, state.refreshTokenMac);
    const keep = {
      signing: file.signing.filter((key, index) => index === 0 || !isRetired('signing', key.kid)),
      encryption: file.encryption.filter(
        (key, index) => index === 0 || !isRetired('refreshTokenMac', key.id),
      ),
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
): (kind: 'signing' | 'refreshTokenMac', id: string) => boolean {
  switch (selection.kind) {
    case 'all':
      return () => true;
    case 'id': {
      const [signing] = state.signing;
      const [refreshTokenMac] = state.refreshTokenMac;
      if (selection.id === signing.kid || selection.id === refreshTokenMac.id)
        throw new Error(`${selection.id} is a current key; run keys:rotate first, then retire it`);
      const known = [...state.signing.map((key) => key.kid), ...state.refreshTokenMac.map((key) => key.id)];
      if (!known.includes(selection.id)) throw new Error(`No key ${selection.id} in the ring`);
      return (_, id) => id === selection.id;
    }
    case 'expired': {
      const now = (selection.now ?? new Date()).getTime();
      const lifetime = {
        signing: selection.accessTokenTtlSeconds * 1000,
        refreshTokenMac: selection.refreshTokenTtlSeconds * 1000,
      };
      const superseded = new Map<string, Date | undefined>([
        ...state.signing.map((key) => [key.kid, key.supersededAt] as const),
        ...state.refreshTokenMac.map((key) => [key.id, key.supersededAt] as const),
      ]);
      return (kind, id) => {
        const since = superseded.get(id);
        return since !== undefined && now - since.getTime() >= lifetime[kind] + RETIRE_MARGIN_MS;
      };
    }
  }
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

function newRefreshTokenMacKey(createdAt: string): KeyRingFile['encryption'][number] {
  const key = randomBytes(32);
  return { id: refreshTokenMacKeyId(key), createdAt, key: key.toString('base64') };
}
