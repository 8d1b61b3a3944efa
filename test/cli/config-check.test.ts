/**
 * `config:check` and the production start name the same list of what a production deployment
 * should not have: mail written to files, memory stores, a plain-HTTP APP_URL, a publicly
 * known secret still accepted. The command exits 1 while the list is not empty.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Backend,
  realServersMissing,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { privateServiceEnv, spawnService, waitForHttp } from '../support/processes.ts';
import { runCli } from './run-cli.ts';

/** A deployment that has everything right, but for the stores. */
const SOUND = {
  APP_URL: 'https://auth.example.com',
  SMTP_URL: 'smtp://mail.example.com:587',
  BCRYPT_COST: '4',
};

describe('config:check', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'config-check-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  const listed = (stdout: string) => stdout.trim().split('\n');

  test('the embedded defaults: mail to files, memory stores, http:// APP_URL, the seeded secrets; exit 1', async () => {
    const result = await runCli(['config:check'], {
      cwd,
      env: { BCRYPT_COST: '4', LOG_DIR: join(cwd, 'log') },
    });
    assert.equal(result.code, 1, result.stderr);
    const lines = listed(result.stdout);
    assert.match(
      lines[0] ?? '',
      new RegExp(`^SMTP_URL is unset: .* written to files in ${join(cwd, 'log', 'mail')}`),
    );
    assert.match(lines[1] ?? '', /^MONGODB_URL is unset: .* in memory/);
    assert.match(lines[2] ?? '', /^REDIS_URL is unset: refresh tokens live in memory/);
    assert.match(lines[3] ?? '', /^APP_URL is http:\/\//);
    assert.deepEqual(lines.slice(4), [
      'client "admin" has its default secret',
      'client "frontend" has its default secret',
      'account "admin" has its default password',
      'account "user@example.com" has its default password',
    ]);
    assert.match(result.stderr, /^error: 8 thing\(s\) a production deployment should not have.*\n$/);
  });

  test('an error report token copied from .env.example is named by its alias', async () => {
    const result = await runCli(['config:check'], {
      cwd,
      env: { ...SOUND, ERROR_REPORT_TOKENS: 'web:change-me-to-a-long-random-token,app:0123456789abcdef0123' },
    });
    assert.equal(result.code, 1);
    assert.ok(
      listed(result.stdout).includes('ERROR_REPORT_TOKENS: the token of "web" is the documented example'),
    );
    assert.ok(!result.stdout.includes('"app"'));
    assert.ok(!result.stdout.includes('change-me'), 'no token is printed');
  });

  describe('over MongoDB and Redis', {
    skip: realServersMissing('config:check over MongoDB and Redis'),
  }, () => {
    const owned: Backend[] = [];
    let env: Record<string, string>;
    before(async () => {
      const own = async (start: () => Promise<Backend>) => {
        const backend = await start();
        owned.push(backend);
        return backend.url;
      };
      env = {
        ...SOUND,
        MONGODB_URL: withDatabase(process.env.MONGODB_URL ?? (await own(startFerretDb)), uniqueName('check')),
        REDIS_URL: process.env.REDIS_URL ?? (await own(startRedis)),
      };
    });
    after(() => Promise.all(owned.map((backend) => backend.dispose())));

    test('nothing to name: exit 0; once seeded, the publicly known secrets: exit 1', async () => {
      const clean = await runCli(['config:check'], { cwd, env });
      assert.equal(clean.code, 0, clean.stderr);
      assert.equal(clean.stdout, 'Nothing a production deployment should not have\n');
      assert.equal((await runCli(['seed'], { cwd, env })).code, 0);
      const seeded = await runCli(['config:check'], { cwd, env });
      assert.equal(seeded.code, 1);
      assert.deepEqual(listed(seeded.stdout), [
        'client "admin" has its default secret',
        'client "frontend" has its default secret',
        'account "admin" has its default password',
        'account "user@example.com" has its default password',
      ]);
    });
  });
});

describe('a production start', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'production-start-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('names in one log entry the very list config:check prints', async () => {
    const env = { ...(await privateServiceEnv(root)), NODE_ENV: 'production' };
    const service = spawnService({ cwd: root, env });
    try {
      await waitForHttp(service.url, { service });
      await service.waitForRecord((record) => Array.isArray(record.notForProduction));
      const entries = service.records().filter((record) => record.notForProduction);
      assert.equal(entries.length, 1);
      assert.equal(entries[0]?.level, 40, 'a warning');
      const checked = await runCli(['config:check'], { cwd: root, env });
      assert.deepEqual(entries[0]?.notForProduction, checked.stdout.trim().split('\n'));
    } finally {
      await service.stop();
    }
  });
});
