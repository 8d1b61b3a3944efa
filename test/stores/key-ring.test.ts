/**
 * The key ring on disk (src/stores/key-ring/): one file per generation, written atomically,
 * changed by several writers at once without losing a change, read as generation 0 from the
 * three files of earlier versions, and in the very format deployments hold today.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type KeyRingState, refreshTokenMacKeyId, thumbprint } from '../../src/oauth/key-ring-store.ts';
import { ensureKeys, generateKeys, rotateKeys } from '../../src/oauth/key-rotation.ts';
import { temporaryPath } from '../../src/stores/key-ring/commit.ts';
import { fileKeyRingStore } from '../../src/stores/key-ring/file-store.ts';
import { LEGACY_FILES } from '../../src/stores/key-ring/legacy-files.ts';

const freshDir = () => mkdtempSync(join(tmpdir(), 'keys-'));
const kids = (ring: KeyRingState) => ring.signing.map((key) => key.kid);
const macKeyIds = (ring: KeyRingState) => ring.refreshTokenMac.map((key) => key.id);

/** The three files an earlier version wrote, and what it called them. */
function writeLegacyFiles(dir: string): { kid: string; macKey: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const macKey = randomBytes(32);
  writeFileSync(join(dir, 'private.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  writeFileSync(join(dir, 'public.key'), publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(dir, 'encryption.key'), `${macKey.toString('base64')}\n`, { mode: 0o600 });
  return { kid: thumbprint(publicKey), macKey };
}

describe('generating keys', () => {
  test('the first start writes one ring file, mode 0600, with a signing key and a refresh-token key', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    assert.equal(await ensureKeys(store), true);
    assert.equal(await ensureKeys(store), false);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json']);
    assert.equal(statSync(join(dir, 'keyring-1.json')).mode & 0o777, 0o600);
    const ring = await store.read();
    assert.equal(ring.generation, 1);
    assert.equal(ring.signing.length, 1);
    assert.match(ring.signing[0].kid, /^[\w-]{43}$/);
    assert.equal(ring.signing[0].kid, thumbprint(ring.signing[0].publicKey));
    assert.equal(ring.refreshTokenMac[0].key.length, 32);
    assert.equal(
      ring.refreshTokenMac[0].id,
      createHash('sha256').update(ring.refreshTokenMac[0].key).digest('base64url').slice(0, 8),
    );
  });

  test('concurrent first starts write exactly one ring and never overwrite it', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    const results = await Promise.all(Array.from({ length: 6 }, () => ensureKeys(fileKeyRingStore(dir))));
    assert.equal(results.filter(Boolean).length, 1);
    const first = readFileSync(join(dir, 'keyring-1.json'), 'utf8');
    await ensureKeys(store);
    assert.equal(readFileSync(join(dir, 'keyring-1.json'), 'utf8'), first);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json'], 'no temporary files left');
  });

  test('an earlier generation keeps its number but no longer holds any key', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    await generateKeys(store, { force: false });
    const secret = (await store.read()).refreshTokenMac[0].key.toString('base64');
    await rotateKeys(store);
    assert.deepEqual(readdirSync(dir).sort(), ['keyring-1.json', 'keyring-2.json']);
    const emptied = readFileSync(join(dir, 'keyring-1.json'), 'utf8');
    assert.doesNotMatch(emptied, /PRIVATE KEY/);
    assert.ok(!emptied.includes(secret));
    assert.equal((await store.read()).generation, 2);
  });
});

describe('the files of earlier versions', () => {
  test('are read as generation 0 with the same kid and a derived refresh-key id', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    const legacy = writeLegacyFiles(dir);
    assert.equal(await ensureKeys(store), false, 'nothing is generated over them');
    const ring = await store.read();
    assert.equal(ring.generation, 0);
    assert.deepEqual(kids(ring), [legacy.kid]);
    assert.deepEqual(macKeyIds(ring), [refreshTokenMacKeyId(legacy.macKey)]);
    assert.deepEqual(ring.refreshTokenMac[0].key, legacy.macKey);
  });

  test('the first rotation folds them into the ring, still verifying, and removes them', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    const legacy = writeLegacyFiles(dir);
    const ring = await rotateKeys(store);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json']);
    assert.equal(ring.signing.length, 2);
    assert.equal(ring.signing[1]?.kid, legacy.kid);
    assert.ok(ring.signing[1]?.supersededAt);
    assert.equal(ring.signing[1]?.privateKey, undefined, 'the superseded private key is dropped');
    assert.deepEqual(ring.refreshTokenMac[1]?.key, legacy.macKey);
  });

  test('a public key that does not belong to the private key is refused', async () => {
    const a = freshDir();
    const b = freshDir();
    writeLegacyFiles(a);
    writeLegacyFiles(b);
    writeFileSync(join(a, 'public.key'), readFileSync(join(b, 'public.key')));
    await assert.rejects(fileKeyRingStore(a).read(), /does not belong/);
  });

  test('an incomplete set is reported, never completed or replaced', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    writeLegacyFiles(dir);
    rmSync(join(dir, 'encryption.key'));
    await assert.rejects(ensureKeys(store), /Incomplete key set .*found only private.key, public.key/);
    await assert.rejects(store.read(), /Incomplete key set/);
    assert.deepEqual(readdirSync(dir).sort(), ['private.key', 'public.key']);
  });
});

describe('key files that deployments hold today', () => {
  /** Throwaway keys written by the service itself (see the README beside them). */
  const FIXTURES = fileURLToPath(new URL('./fixtures/throwaway-keys/', import.meta.url));
  const copyOf = (fixture: 'ring' | 'legacy') => {
    const dir = freshDir();
    cpSync(join(FIXTURES, fixture), dir, { recursive: true });
    return dir;
  };
  const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
  /** The member names of the file and of each entry of its lists, in order: the format, without the keys. */
  const shape = (file: { signing: object[]; encryption: object[] }) => ({
    members: Object.keys(file),
    signing: file.signing.map((entry) => Object.keys(entry)),
    encryption: file.encryption.map((entry) => Object.keys(entry)),
  });

  test('a ring written by keys:generate and keys:rotate is read as it was written', async () => {
    const dir = copyOf('ring');
    const store = fileKeyRingStore(dir);
    const written = readJson(join(dir, 'keyring-2.json'));
    const ring = await store.read();
    assert.equal(ring.generation, 2);
    assert.deepEqual(kids(ring), [
      'S4va1VFvJVkggOoOuY1DpM4u3X6iqaO2_HMpeAej9Bo',
      'nV7GCaa0pgaCvlN6hUZKhvyj80eNNtU2Dh-TWGu2F7I',
    ]);
    assert.deepEqual(macKeyIds(ring), ['BJutCk4V', '7cpD7XBI']);
    assert.deepEqual(
      ring.refreshTokenMac.map((key) => key.key.toString('base64')),
      written.encryption.map((key: { key: string }) => key.key),
    );
    assert.deepEqual(ring.signing[1]?.supersededAt, new Date('2026-11-24T20:29:30.707Z'));
    const signature = sign('sha256', Buffer.from('claims'), ring.signing[0].privateKey);
    assert.ok(verify('sha256', Buffer.from('claims'), ring.signing[0].publicKey, signature));
  });

  test('its next generation is written in the same format, the earlier keys carried over as they were', async () => {
    const dir = copyOf('ring');
    const store = fileKeyRingStore(dir);
    const before = readJson(join(dir, 'keyring-2.json'));
    await rotateKeys(store);
    const after = readJson(join(dir, 'keyring-3.json'));
    const [was, now] = [shape(before), shape(after)];
    assert.deepEqual(now, {
      members: was.members,
      signing: [...was.signing, was.signing[1]],
      encryption: [...was.encryption, was.encryption[1]],
    });
    assert.deepEqual(after.signing[2], before.signing[1]);
    assert.deepEqual(after.encryption[2], before.encryption[1]);
    assert.equal(
      readFileSync(join(dir, 'keyring-2.json'), 'utf8'),
      readFileSync(join(FIXTURES, 'ring', 'keyring-1.json'), 'utf8').replace('2', '3'),
      'the replaced generation is emptied as before',
    );
  });

  test('the three files of versions before rings are read, and folded into the ring by the first change', async () => {
    const dir = copyOf('legacy');
    const store = fileKeyRingStore(dir);
    const ring = await store.read();
    assert.equal(ring.generation, 0);
    assert.deepEqual(kids(ring), ['bAadteacnKR7KhenBAoHQCoWBq3O3ndMlJFIsnXE-MI']);
    assert.equal(thumbprint(createPublicKey(readFileSync(join(dir, 'public.key')))), kids(ring)[0]);
    assert.deepEqual(macKeyIds(ring), ['ib2b_I5x']);
    assert.equal(
      ring.refreshTokenMac[0].key.toString('base64'),
      readFileSync(join(dir, 'encryption.key'), 'utf8').trim(),
    );

    const rotated = await rotateKeys(store);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json']);
    assert.deepEqual(kids(rotated).slice(1), kids(ring));
    assert.deepEqual(macKeyIds(rotated).slice(1), macKeyIds(ring));
  });
});

describe('rotating keys', () => {
  test('concurrent rotations are all kept: none overwrites another', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    await generateKeys(store, { force: false });
    const rings = await Promise.all(Array.from({ length: 5 }, () => rotateKeys(fileKeyRingStore(dir))));
    const final = await store.read();
    assert.equal(final.generation, 6);
    assert.equal(final.signing.length, 6);
    assert.equal(final.refreshTokenMac.length, 6);
    for (const ring of rings)
      assert.ok(kids(final).includes(ring.signing[0].kid), 'every new key is in the ring');
    assert.ok(
      readdirSync(dir).every((name) => /^keyring-\d+\.json$/.test(name)),
      'no temporary files left',
    );
  });

  test('a reader never sees half a ring while rotations are written', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    await generateKeys(store, { force: false });
    let writing = true;
    const writer = (async () => {
      for (let i = 0; i < 8; i++) await rotateKeys(store);
      writing = false;
    })();
    let reads = 0;
    while (writing) {
      const ring = await store.read();
      assert.ok(ring.signing[0].privateKey);
      reads++;
    }
    await writer;
    assert.ok(reads > 0);
  });

  test('a damaged newest generation is refused, naming the file', async () => {
    const dir = freshDir();
    const store = fileKeyRingStore(dir);
    await generateKeys(store, { force: false });
    writeFileSync(join(dir, 'keyring-2.json'), '{"signing": [');
    await assert.rejects(store.read(), /keyring-2\.json is not valid JSON/);
    writeFileSync(join(dir, 'keyring-2.json'), '{"signing": [], "encryption": []}');
    await assert.rejects(store.read(), /keyring-2\.json: no signing key/);
  });
});

describe('a checkout', () => {
  const repository = fileURLToPath(new URL('../../', import.meta.url));
  const ignored = (path: string) =>
    spawnSync('git', ['-C', repository, 'check-ignore', '--no-index', '--quiet', path]).status === 0;
  const git = spawnSync('git', ['-C', repository, 'rev-parse', '--git-dir']);
  const skip = git.status === 0 ? false : 'not a git checkout (or no git): .gitignore not checked';
  if (skip) console.log(`# ${skip}`);

  test('never shows git the ring, the files a change passes through, or the files of earlier versions', {
    skip,
  }, () => {
    const ring = join('keys', 'keyring-12.json');
    for (const path of [
      join('keys', 'keyring-1.json'),
      ring,
      temporaryPath(ring),
      ...LEGACY_FILES.map((name) => join('keys', name)),
    ]) {
      assert.ok(ignored(path), `${path} is not git-ignored`);
    }
    assert.equal(ignored(join('keys', '.gitkeep')), false, 'the directory itself stays in the checkout');
  });
});
