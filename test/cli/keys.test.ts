/**
 * The keys commands as an operator runs them: keys:generate, keys:rotate, keys:retire and
 * keys:list on KEYS_DIR (or --dir), each ending with the ring it leaves.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openKeyRingStore } from '../../src/services.ts';
import { isOneLineFailure, runCli } from './run-cli.ts';

describe('cli keys:*', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-keys-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  const lines = (stdout: string, role: string) =>
    stdout.split('\n').filter((line) => line.split(/\s+/)[2] === role);

  test('keys:generate writes a ring into KEYS_DIR, refuses to replace it (one line), replaces it with --force', async () => {
    const env = { KEYS_DIR: join(cwd, 'generated') };
    const first = await runCli(['keys:generate'], { cwd, env });
    assert.equal(first.code, 0, first.stderr);
    const ring = await openKeyRingStore(env.KEYS_DIR).read();
    assert.match(first.stdout, new RegExp(`signing +${ring.signing[0].kid} +signs`));
    assert.match(first.stdout, new RegExp(`refresh +${ring.refreshTokenMac[0].id} +mints`));

    const again = await runCli(['keys:generate'], { cwd, env });
    assert.ok(isOneLineFailure(again), again.stderr);
    assert.match(again.stderr, /--force/);
    assert.equal((await openKeyRingStore(env.KEYS_DIR).read()).signing[0].kid, ring.signing[0].kid);

    const forced = await runCli(['keys:generate', '--force'], { cwd, env });
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /now invalid .*keys:rotate/);
    assert.notEqual((await openKeyRingStore(env.KEYS_DIR).read()).signing[0].kid, ring.signing[0].kid);
  });

  test('keys:rotate adds a key that signs while the earlier one verifies; keys:list shows both', async () => {
    const dir = join(cwd, 'rotated');
    assert.equal((await runCli(['keys:generate', '--dir', dir], { cwd })).code, 0);
    const rotated = await runCli(['keys:rotate', '--dir', dir], { cwd });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /Key ring generation 2/);
    assert.match(rotated.stdout, /Nobody is signed out/);
    const listed = await runCli(['keys:list', '--dir', dir], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(lines(listed.stdout, 'signs').length, 1);
    assert.equal(lines(listed.stdout, 'mints').length, 1);
    assert.equal(lines(listed.stdout, 'verifies').length, 2, 'the earlier signing and refresh keys');
    assert.match(lines(listed.stdout, 'verifies')[0] ?? '', /superseded \d{4}-\d\d-\d\dT/);
  });

  test('keys:retire keeps keys whose tokens may still be alive, and retires by id or all', async () => {
    const dir = join(cwd, 'retired');
    await runCli(['keys:generate', '--dir', dir], { cwd });
    await runCli(['keys:rotate', '--dir', dir], { cwd });
    await runCli(['keys:rotate', '--dir', dir], { cwd });
    const ring = await openKeyRingStore(dir).read();
    const [current, middle, oldest] = ring.signing.map((key) => key.kid);

    const early = await runCli(['keys:retire', '--dir', dir], { cwd });
    assert.equal(early.code, 0, early.stderr);
    assert.match(early.stdout, /^No key to retire yet/);
    assert.equal((await openKeyRingStore(dir).read()).signing.length, 3);

    const ofCurrent = await runCli(['keys:retire', '--id', current ?? '', '--dir', dir], { cwd });
    assert.ok(isOneLineFailure(ofCurrent), ofCurrent.stderr);
    assert.match(ofCurrent.stderr, /is a current key; run keys:rotate first/);

    const one = await runCli(['keys:retire', '--id', middle ?? '', '--dir', dir], { cwd });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^Retired ${middle}`));
    assert.deepEqual(
      (await openKeyRingStore(dir).read()).signing.map((key) => key.kid),
      [current, oldest],
    );

    const all = await runCli(['keys:retire', '--all', '--dir', dir], { cwd });
    assert.equal(all.code, 0, all.stderr);
    const left = await openKeyRingStore(dir).read();
    assert.deepEqual(
      left.signing.map((key) => key.kid),
      [current],
    );
    assert.equal(left.refreshTokenMac.length, 1);
  });

  test('a key directory open to others is tightened to 0700 by the commands that write it, saying so', async () => {
    const dir = join(cwd, 'open');
    await mkdir(dir);
    await chmod(dir, 0o755);
    const generated = await runCli(['keys:generate', '--dir', dir], { cwd });
    assert.equal(generated.code, 0, generated.stderr);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.match(generated.stderr, new RegExp(`${dir} from 0755 to 0700`));
    await chmod(dir, 0o711);
    const rotated = await runCli(['keys:rotate', '--dir', dir], { cwd });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
  });

  test('keys:rotate and keys:list without keys fail with one line saying what to run', async () => {
    for (const command of ['keys:rotate', 'keys:list']) {
      const result = await runCli([command, '--dir', join(cwd, 'empty')], { cwd });
      assert.ok(isOneLineFailure(result), `${command}: ${result.stderr}`);
      assert.match(result.stderr, /No keys in .*run keys:generate/);
    }
  });

  test('every keys command has --help and --dir', async () => {
    for (const command of ['keys:generate', 'keys:rotate', 'keys:retire', 'keys:list']) {
      const help = await runCli([command, '--help'], { cwd });
      assert.equal(help.code, 0);
      assert.match(help.stdout, /--dir <dir>/, command);
    }
  });
});
