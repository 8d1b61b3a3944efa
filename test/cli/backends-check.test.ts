/**
 * `backends:check`, the readiness probe the compose healthcheck runs: exit 0 only when every
 * configured backend answers, one line per backend, and never a password.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Backend,
  freePort,
  realServersMissing,
  startFerretDb,
  startRedis,
  withDatabase,
} from '../support/backends.ts';
import { runCli } from './run-cli.ts';

const PASSWORD = 'probe-secret-7Hq2';

describe('cli backends:check', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-backends-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  test('with both URLs unset the stores are embedded, which counts as answering', async () => {
    const result = await runCli(['backends:check'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'MongoDB: embedded (MONGODB_URL unset)',
      'Redis: embedded (REDIS_URL unset)',
    ]);
  });

  test('a backend that does not answer fails the check, named, without its password', async () => {
    const [mongoPort, redisPort] = [await freePort(), await freePort()];
    const result = await runCli(['backends:check', '--timeout', '1'], {
      cwd,
      env: {
        MONGODB_URL: `mongodb://probe:${PASSWORD}@127.0.0.1:${mongoPort}/tokenservice`,
        REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${redisPort}`,
      },
    });
    assert.equal(result.code, 1);
    const lines = result.stdout.trim().split('\n');
    assert.equal(lines.length, 2, result.stdout);
    assert.match(lines[0] ?? '', new RegExp(`^MongoDB at 127\\.0\\.0\\.1:${mongoPort} is unreachable`));
    assert.match(lines[1] ?? '', new RegExp(`^Redis at 127\\.0\\.0\\.1:${redisPort} is unreachable`));
    assert.equal(result.stderr.trim(), 'error: not ready: MongoDB and Redis did not answer');
    assert.ok(!`${result.stdout}${result.stderr}`.includes(PASSWORD), 'no password printed');
  });

  describe('against real servers', {
    skip: realServersMissing('backends:check against real servers'),
  }, () => {
    let redis: Backend;
    let ferret: Backend;
    before(async () => {
      [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    });
    after(() => Promise.all([redis?.dispose(), ferret?.dispose()]));

    const check = () =>
      runCli(['backends:check', '--timeout', '2'], {
        cwd,
        env: { MONGODB_URL: withDatabase(ferret.url, 'probe'), REDIS_URL: redis.url },
      });

    test('exits 0 when MongoDB and Redis both answer', async () => {
      const result = await check();
      assert.equal(result.code, 0, result.stderr);
      const lines = result.stdout.trim().split('\n');
      assert.match(lines[0] ?? '', /^MongoDB at 127\.0\.0\.1:\d+: answers \(\d+ ms\)$/);
      assert.match(lines[1] ?? '', /^Redis at 127\.0\.0\.1:\d+: answers \(\d+ ms\)$/);
    });

    test('exits 1 naming Redis while it is down, and 0 again once it is back', async () => {
      await redis.stop();
      try {
        const down = await check();
        assert.equal(down.code, 1);
        assert.match(down.stdout, /^MongoDB at .*: answers/m);
        assert.match(down.stdout, /^Redis at .* is unreachable/m);
        assert.equal(down.stderr.trim(), 'error: not ready: Redis did not answer');
      } finally {
        await redis.restart();
      }
      assert.equal((await check()).code, 0);
    });

    test('exits 1 naming MongoDB while it is down', async () => {
      await ferret.stop();
      try {
        const down = await check();
        assert.equal(down.code, 1);
        assert.match(down.stdout, /^MongoDB at .* is unreachable/m);
        assert.match(down.stdout, /^Redis at .*: answers/m);
        assert.equal(down.stderr.trim(), 'error: not ready: MongoDB did not answer');
      } finally {
        await ferret.restart();
      }
    });
  });
});
