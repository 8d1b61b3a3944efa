import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ensureKeyFiles, generateKeyFiles, KeyFilesExist, loadKeySet } from '../../src/oauth/keys.ts';

const freshDir = () => mkdtempSync(join(tmpdir(), 'keys-'));
const cli = (...args: string[]) =>
  spawnSync(process.execPath, ['src/cli/main.ts', ...args], { encoding: 'utf8', timeout: 30_000 });

describe('key files', () => {
  test('are generated once: private key 0600, and a loadable, matching set', async () => {
    const dir = freshDir();
    assert.equal(await ensureKeyFiles(dir), true);
    assert.equal(await ensureKeyFiles(dir), false);
    assert.deepEqual(readdirSync(dir).sort(), ['encryption.key', 'private.key', 'public.key']);
    assert.equal(statSync(join(dir, 'private.key')).mode & 0o777, 0o600);
    const keys = loadKeySet(dir);
    assert.equal(keys.encryptionKey.length, 32);
    assert.match(keys.keyId, /^[\w-]{43}$/);
  });

  test('concurrent first starts write exactly one set and never overwrite it', async () => {
    const dir = freshDir();
    const results = await Promise.all(Array.from({ length: 6 }, () => ensureKeyFiles(dir)));
    assert.equal(results.filter(Boolean).length, 1);
    const first = readFileSync(join(dir, 'private.key'), 'utf8');
    await ensureKeyFiles(dir);
    assert.equal(readFileSync(join(dir, 'private.key'), 'utf8'), first);
    assert.ok(loadKeySet(dir));
    assert.deepEqual(
      readdirSync(dir).sort(),
      ['encryption.key', 'private.key', 'public.key'],
      'no temporary files left',
    );
  });

  test('generating refuses to overwrite without force', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    const before = readFileSync(join(dir, 'private.key'), 'utf8');
    await assert.rejects(generateKeyFiles(dir, { force: false }), KeyFilesExist);
    assert.equal(readFileSync(join(dir, 'private.key'), 'utf8'), before);
    await generateKeyFiles(dir, { force: true });
    assert.notEqual(readFileSync(join(dir, 'private.key'), 'utf8'), before);
  });

  test('a public key that does not belong to the private key is refused at load', async () => {
    const a = freshDir();
    const b = freshDir();
    await generateKeyFiles(a, { force: false });
    await generateKeyFiles(b, { force: false });
    writeFileSync(join(a, 'public.key'), readFileSync(join(b, 'public.key')));
    assert.throws(() => loadKeySet(a), /does not belong/);
  });

  test('an incomplete set is not silently completed', async () => {
    const dir = freshDir();
    await generateKeyFiles(dir, { force: false });
    writeFileSync(join(dir, 'other'), '');
    const { rmSync } = await import('node:fs');
    rmSync(join(dir, 'encryption.key'));
    await assert.rejects(ensureKeyFiles(dir, 300), /Incomplete key set/);
  });
});

describe('cli keys:generate', () => {
  test('writes the keys, refuses to overwrite (exit 1, one line), replaces with --force', () => {
    const dir = freshDir();
    const first = cli('keys:generate', '--dir', dir);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /Wrote private.key/);
    const before = readFileSync(join(dir, 'private.key'), 'utf8');
    const again = cli('keys:generate', '--dir', dir);
    assert.equal(again.status, 1);
    assert.equal(again.stderr.trim().split('\n').length, 1);
    assert.match(again.stderr, /--force/);
    assert.equal(readFileSync(join(dir, 'private.key'), 'utf8'), before);
    const forced = cli('keys:generate', '--dir', dir, '--force');
    assert.equal(forced.status, 0, forced.stderr);
    assert.notEqual(readFileSync(join(dir, 'private.key'), 'utf8'), before);
  });

  test('uses KEYS_DIR by default and has --help', () => {
    const help = cli('keys:generate', '--help');
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--force/);
  });
});
