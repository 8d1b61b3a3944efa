import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

const pkg = { name: 'svc', version: '9.9.9' };

describe('configuration', () => {
  test('the defaults are the documented ones', () => {
    const config = loadConfig({}, pkg);
    assert.equal(config.port, 8080);
    assert.equal(config.appUrl, 'http://localhost:8080');
    assert.equal(config.accessTokenTtl, 86400);
    assert.equal(config.refreshTokenTtl, 2592000);
    assert.equal(config.accessTokenAlg, 'RS256');
    assert.deepEqual(
      [...config.grants],
      ['password', 'refresh_token', 'client_credentials', 'authorization_code'],
    );
    assert.equal(config.authorizationCodeTtl, 60);
    assert.equal(config.bodyLimit, 1024 * 1024);
    assert.equal(config.workers, 1, 'embedded mode runs one worker');
    assert.equal(config.appName, 'svc');
  });

  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['WORKERS', '0'],
    ['ACCESS_TOKEN_TTL', '-5'],
    ['ACCESS_TOKEN_ALG', 'HS256'],
    ['OAUTH_GRANTS', 'password,implicit'],
    ['BCRYPT_COST', '3'],
    ['BODY_LIMIT', 'lots'],
    ['APP_URL', 'ftp://x'],
    ['MONGODB_URL', 'http://x'],
    ['REDIS_URL', 'not a url'],
    ['ERROR_REPORT_IP_WHITELIST', '10.0.0.0/33'],
    ['ERROR_REPORT_TOKENS', 'web:short'],
  ] as const) {
    test(`${name}=${value} is refused with a message naming ${name}`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }, pkg),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
      );
    });
  }

  test('a CONFIG_FILE header value with control characters stops the start', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'config.json');
    writeFileSync(file, JSON.stringify({ responseHeaders: { '*': { 'X-Bad': 'a\u0000b' } } }));
    assert.throws(
      () => loadConfig({ CONFIG_FILE: file }, pkg),
      (error: unknown) => error instanceof ConfigError && error.message.includes('X-Bad'),
    );
  });

  test('a connection URL is never echoed in an error (it may carry a password)', () => {
    assert.throws(
      () => loadConfig({ REDIS_URL: 'http://user:s3cret@host' }, pkg),
      (error: unknown) => error instanceof Error && !error.message.includes('s3cret'),
    );
  });

  test('a bad value stops the start with the message and exit code 1', () => {
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: { ...process.env, ACCESS_TOKEN_ALG: 'none', KEYS_DIR: '/nonexistent-never-written' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /ACCESS_TOKEN_ALG/);
    assert.ok(!result.stderr.includes('    at '), 'no stack trace');
  });
});
