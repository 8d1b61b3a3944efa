/**
 * The key ring on disk (src/oauth/keys.ts): one file per generation, written atomically,
 * changed by several writers at once without losing a change, and read as generation 0 from
 * the three files of earlier versions.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  encryptionKeyId,
  ensureKeyFiles,
  generateKeyFiles,
  KeyFilesExist,
  type KeyRingState,
  LEGACY_FILES,
  readKeyRing,
  retireKeys,
  rotateKeys,
  temporaryPath,
  thumbprint,
} from '../../src/oauth/keys.ts';

const freshDir = () => mkdtempSync(join(tmpdir(), 'keys-'));
const kids = (ring: KeyRingState) => ring.signing.map((key) => key.kid);
const encryptionIds = (ring: KeyRingState) => ring.encryption.map((key) => key.id);
const HOUR = 3_600_000;

/** The three files an earlier version wrote, and what it called them. */
function writeLegacyFiles(dir: string): { kid: string; encryptionKey: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const encryptionKey = randomBytes(32);
  writeFileSync(join(dir, 'private.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  writeFileSync(join(dir, 'public.key'), publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(dir, 'encryption.key'), `${encryptionKey.toString('base64')}\n`, { mode: 0o600 });
  return { kid: thumbprint(publicKey), encryptionKey };
}

describe('generating keys', () => {
  test('the first start writes one ring file, mode 0600, with a signing key and a refresh-token key', async () => {
    const dir = freshDir();
    assert.equal(await ensureKeyFiles(dir), true);
    assert.equal(await ensureKeyFiles(dir), false);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json']);
    assert.equal(statSync(join(dir, 'keyring-1.json')).mode & 0o777, 0o600);
    const ring = await readKeyRing(dir);
    assert.equal(ring.generation, 1);
    assert.equal(ring.signing.length, 1);
    assert.match(ring.signing[0].kid, /^[\w-]{43}$/);
    assert.equal(ring.signing[0].kid, thumbprint(ring.signing[0].publicKey));
    assert.equal(ring.encryption[0].key.length, 32);
    assert.equal(
      ring.encryption[0].id,
      createHash('sha256').update(ring.encryption[0].key).digest('base64url').slice(0, 8),
    );
  });

  test('concurrent first starts write exactly one ring and never overwrite it', async () => {
    const dir = freshDir();
    const results = await Promise.all(Array.from({ length: 6 }, () => ensureKeyFiles(dir)));
    assert.equal(results.filter(Boolean).length, 1);
    const first = readFileSync(join(dir, 'keyring-1.json'), 'utf8');
    await ensureKeyFiles(dir);
    assert.equal(readFileSync(join(dir, 'keyring-1.json'), 'utf8'), first);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json'], 'no temporary files left');
  });

  test('keys:generate refuses to replace keys without force; with force every earlier key is gone', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    await rotateKeys(dir);
    const before = await readKeyRing(dir);
    await assert.rejects(generateKeyFiles(dir, { force: false }), KeyFilesExist);
    assert.deepEqual(kids(await readKeyRing(dir)), kids(before));
    await generateKeyFiles(dir, { force: true });
    const after = await readKeyRing(dir);
    assert.equal(after.signing.length, 1);
    assert.equal(after.encryption.length, 1);
    assert.ok(!kids(before).includes(after.signing[0].kid));
    assert.ok(!encryptionIds(before).includes(after.encryption[0].id));
  });

  test('an earlier generation keeps its number but no longer holds any key', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    const secret = (await readKeyRing(dir)).encryption[0].key.toString('base64');
    await rotateKeys(dir);
    assert.deepEqual(readdirSync(dir).sort(), ['keyring-1.json', 'keyring-2.json']);
    const emptied = readFileSync(join(dir, 'keyring-1.json'), 'utf8');
    assert.doesNotMatch(emptied, /PRIVATE KEY/);
    assert.ok(!emptied.includes(secret));
    assert.equal((await readKeyRing(dir)).generation, 2);
  });
});

describe('the files of earlier versions', () => {
  test('are read as generation 0 with the same kid and a derived refresh-key id', async () => {
    const dir = freshDir();
    const legacy = writeLegacyFiles(dir);
    assert.equal(await ensureKeyFiles(dir), false, 'nothing is generated over them');
    const ring = await readKeyRing(dir);
    assert.equal(ring.generation, 0);
    assert.deepEqual(kids(ring), [legacy.kid]);
    assert.deepEqual(encryptionIds(ring), [encryptionKeyId(legacy.encryptionKey)]);
    assert.deepEqual(ring.encryption[0].key, legacy.encryptionKey);
  });

  test('the first rotation folds them into the ring, still verifying, and removes them', async () => {
    const dir = freshDir();
    const legacy = writeLegacyFiles(dir);
    const ring = await rotateKeys(dir);
    assert.deepEqual(readdirSync(dir), ['keyring-1.json']);
    assert.equal(ring.signing.length, 2);
    assert.equal(ring.signing[1]?.kid, legacy.kid);
    assert.ok(ring.signing[1]?.supersededAt);
    assert.equal(ring.signing[1]?.privateKey, undefined, 'the superseded private key is dropped');
    assert.deepEqual(ring.encryption[1]?.key, legacy.encryptionKey);
  });

  test('a public key that does not belong to the private key is refused', async () => {
    const a = freshDir();
    const b = freshDir();
    writeLegacyFiles(a);
    writeLegacyFiles(b);
    writeFileSync(join(a, 'public.key'), readFileSync(join(b, 'public.key')));
    await assert.rejects(readKeyRing(a), /does not belong/);
  });

  test('an incomplete set is reported, never completed or replaced', async () => {
    const dir = freshDir();
    writeLegacyFiles(dir);
    rmSync(join(dir, 'encryption.key'));
    await assert.rejects(ensureKeyFiles(dir), /Incomplete key set .*found only private.key, public.key/);
    await assert.rejects(readKeyRing(dir), /Incomplete key set/);
    assert.deepEqual(readdirSync(dir).sort(), ['private.key', 'public.key']);
  });
});

describe('rotating keys', () => {
  test('a new key signs and mints; the earlier ones keep verifying, without their private key', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    const first = await readKeyRing(dir);
    const rotated = await rotateKeys(dir);
    assert.equal(rotated.generation, 2);
    assert.deepEqual(kids(rotated).slice(1), kids(first));
    assert.deepEqual(encryptionIds(rotated).slice(1), encryptionIds(first));
    assert.ok(rotated.signing[0].privateKey);
    assert.ok(rotated.signing.slice(1).every((key) => key.privateKey === undefined && key.supersededAt));
    assert.deepEqual(await readKeyRing(dir), rotated);
  });

  test('concurrent rotations are all kept: none overwrites another', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    const rings = await Promise.all(Array.from({ length: 5 }, () => rotateKeys(dir)));
    const final = await readKeyRing(dir);
    assert.equal(final.generation, 6);
    assert.equal(final.signing.length, 6);
    assert.equal(final.encryption.length, 6);
    for (const ring of rings)
      assert.ok(kids(final).includes(ring.signing[0].kid), 'every new key is in the ring');
    assert.ok(
      readdirSync(dir).every((name) => /^keyring-\d+\.json$/.test(name)),
      'no temporary files left',
    );
  });

  test('a reader never sees half a ring while rotations are written', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    let writing = true;
    const writer = (async () => {
      for (let i = 0; i < 8; i++) await rotateKeys(dir);
      writing = false;
    })();
    let reads = 0;
    while (writing) {
      const ring = await readKeyRing(dir);
      assert.ok(ring.signing[0].privateKey);
      reads++;
    }
    await writer;
    assert.ok(reads > 0);
  });

  test('a damaged newest generation is refused, naming the file', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    writeFileSync(join(dir, 'keyring-2.json'), '{"signing": [');
    await assert.rejects(readKeyRing(dir), /keyring-2\.json is not valid JSON/);
    writeFileSync(join(dir, 'keyring-2.json'), '{"signing": [], "encryption": []}');
    await assert.rejects(readKeyRing(dir), /keyring-2\.json: no signing key/);
  });
});

describe('retiring keys', () => {
  const ttl = { accessTokenTtlSeconds: 3600, refreshTokenTtlSeconds: 24 * 3600 };

  test('by default only keys whose tokens have all expired, each after its own token lifetime', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    const now = Date.now();
    const original = await rotateKeys(dir, new Date(now - 2 * HOUR));
    const [oldSigning, oldEncryption] = [original.signing[1]?.kid, original.encryption[1]?.id];
    await rotateKeys(dir, new Date(now - HOUR / 2));

    const early = await retireKeys(dir, { kind: 'expired', ...ttl, now: new Date(now) });
    assert.deepEqual(early.retired, [oldSigning], 'the access tokens of the oldest signing key expired');
    assert.equal(early.ring.signing.length, 2);
    assert.equal(early.ring.encryption.length, 3, 'refresh tokens live a day: every refresh key stays');

    const nextDay = await retireKeys(dir, { kind: 'expired', ...ttl, now: new Date(now + 23 * HOUR) });
    assert.ok(nextDay.retired.includes(oldEncryption ?? ''));
    assert.equal(nextDay.ring.signing.length, 1);
    assert.equal(nextDay.ring.encryption.length, 2, 'superseded only 23.5 hours before');
  });

  test('nothing to retire leaves the ring as it is', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    await rotateKeys(dir);
    const { retired, ring } = await retireKeys(dir, { kind: 'expired', ...ttl });
    assert.deepEqual(retired, []);
    assert.equal(ring.generation, 2);
    assert.equal((await readKeyRing(dir)).generation, 2);
  });

  test('one earlier key by id, or all of them; never a current key or an unknown one', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    await rotateKeys(dir);
    const ring = await rotateKeys(dir);
    const [current, middle, oldest] = kids(ring);
    await assert.rejects(retireKeys(dir, { kind: 'id', id: current ?? '' }), /is a current key/);
    await assert.rejects(retireKeys(dir, { kind: 'id', id: ring.encryption[0].id }), /is a current key/);
    await assert.rejects(retireKeys(dir, { kind: 'id', id: 'nope' }), /No key nope/);
    const one = await retireKeys(dir, { kind: 'id', id: middle ?? '' });
    assert.deepEqual(one.retired, [middle]);
    assert.deepEqual(kids(one.ring), [current, oldest]);
    const all = await retireKeys(dir, { kind: 'all' });
    assert.deepEqual(kids(all.ring), [current]);
    assert.deepEqual(encryptionIds(all.ring), [ring.encryption[0].id]);
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
