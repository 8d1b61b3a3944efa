import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { ConfigError } from '../src/config/config.ts';
import { loadConfig } from '../src/config/load.ts';
import { parseRedisUrl, type RedisTarget } from '../src/stores/redis/url.ts';
import { configFile } from './support/config-file.ts';

const pkg = { name: 'svc', version: '9.9.9' };

describe('configuration', () => {
  test('the defaults are the documented ones', () => {
    const config = loadConfig({}, pkg);
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1', 'only this machine, unless HOST says otherwise');
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
    assert.equal(config.refreshTokenRetrySeconds, 60);
    assert.deepEqual(config.redisReplicaAcks, { replicas: 0, timeoutMs: 500 });
  });

  test('REDIS_MIN_REPLICA_ACKS: 1 behind Sentinels and in a Cluster, 0 otherwise, unless set', () => {
    const acks = (env: Record<string, string>) => loadConfig(env, pkg).redisReplicaAcks.replicas;
    assert.equal(acks({ REDIS_URL: 'redis+sentinel://s1:26379,s2:26379/tokenservice' }), 1);
    assert.equal(
      acks({ REDIS_URL: 'redis+sentinel://s1:26379/tokenservice', REDIS_MIN_REPLICA_ACKS: '0' }),
      0,
    );
    assert.equal(acks({ REDIS_URL: 'redis://redis:6379' }), 0);
    assert.equal(acks({ REDIS_URL: 'redis://redis:6379', REDIS_MIN_REPLICA_ACKS: '2' }), 2);
    assert.equal(acks({ REDIS_URL: 'redis+cluster://n1:7000,n2:7001' }), 1);
    assert.equal(acks({ REDIS_URL: 'redis+cluster://n1:7000', REDIS_MIN_REPLICA_ACKS: '2' }), 2);
    assert.equal(acks({ REDIS_URL: 'redis+cluster://n1:7000', REDIS_MIN_REPLICA_ACKS: '0' }), 0);
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
    ['REFRESH_TOKEN_RETRY_SECONDS', '301'],
    ['REDIS_REPLICA_ACK_TIMEOUT_MS', '0'],
    ['REDIS_REPLICA_ACK_TIMEOUT_MS', '901'],
  ] as const) {
    test(`${name}=${value} is refused with a message naming ${name}`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }, pkg),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
      );
    });
  }

  test('a CONFIG_FILE header value with control characters stops the start', () => {
    const file = configFile({ responseHeaders: { '*': { 'X-Bad': 'a\u0000b' } } });
    assert.throws(
      () => loadConfig({ CONFIG_FILE: file }, pkg),
      (error: unknown) => error instanceof ConfigError && error.message.includes('X-Bad'),
    );
  });

  for (const [contents, member] of [
    [{ cors: { maxAge: 'ten' } }, 'cors.maxAge'],
    [{ cors: { maxAge: -1 } }, 'cors.maxAge'],
    [{ cors: { maxAge: 1.5 } }, 'cors.maxAge'],
    [{ cors: { maxage: 600 } }, 'cors.maxage'],
    [{ responseHeader: {} }, 'responseHeader'],
    [{ responseHeaders: { '*': { 'X-Frame-Options': 1 } } }, 'responseHeaders.*.X-Frame-Options'],
    [{ responseHeaders: { 'a/b~c': { 'X-A': null } } }, 'responseHeaders.a/b~c.X-A'],
    [{ deprecations: { home: { since: '2025-01-01' } } }, 'deprecations.home.sunset'],
    [
      { deprecations: { home: { since: '2025-01-01', sunset: '2099-01-01', link: 'http://[' } } },
      'deprecations.home.link',
    ],
  ] as const) {
    test(`CONFIG_FILE ${JSON.stringify(contents)} stops the start naming ${member}`, () => {
      assert.throws(
        () => loadConfig({ CONFIG_FILE: configFile(contents) }, pkg),
        (error: unknown) => error instanceof ConfigError && error.message.includes(`CONFIG_FILE ${member}`),
      );
    });
  }

  test('CONFIG_FILE refuses framing, hop-by-hop and service-owned headers, in any case, naming the member', () => {
    const refused = [
      'Content-Length',
      'transfer-encoding',
      'Connection',
      'KEEP-ALIVE',
      'Upgrade',
      'Host',
      'TE',
      'Trailer',
      'Proxy-Authenticate',
      'Proxy-Connection',
      'Content-Encoding',
      'Date',
      'Content-Type',
      'Location',
      'WWW-Authenticate',
      'Allow',
      'Set-Cookie',
      'Access-Control-Allow-Origin',
      'access-control-allow-credentials',
      'Deprecation',
      'Sunset',
      'Link',
    ];
    for (const route of ['*', 'home'])
      for (const header of refused) {
        const member = `responseHeaders.${route}.${header}`;
        assert.throws(
          () =>
            loadConfig({ CONFIG_FILE: configFile({ responseHeaders: { [route]: { [header]: '3' } } }) }, pkg),
          (error: unknown) =>
            error instanceof ConfigError && error.message.includes(`CONFIG_FILE ${member}:`),
          member,
        );
      }
  });

  test('CONFIG_FILE still sets the headers the service leaves to the operator', () => {
    const headers = {
      'X-Frame-Options': 'DENY',
      'Cache-Control': 'no-cache',
      'Content-Security-Policy': "default-src 'none'",
      Vary: 'Accept',
      'Strict-Transport-Security': 'max-age=63072000',
    };
    const config = loadConfig(
      { CONFIG_FILE: configFile({ responseHeaders: { '*': headers, home: headers } }) },
      pkg,
    );
    assert.deepEqual(config.responseHeaders.home, headers);
    assert.equal(config.responseHeaders['*']?.['X-Content-Type-Options'], 'nosniff');
  });

  test('MONGODB_URL: every connection string the driver accepts passes unchanged', () => {
    for (const url of [
      'mongodb://127.0.0.1:27017/tokenservice?directConnection=true',
      'mongodb://h1:27017,h2:27017,h3:27017/tokenservice?replicaSet=rs0',
      'mongodb://user:p%40ss@h1,h2/tokenservice?replicaSet=rs0&authSource=admin&w=majority',
      'mongodb+srv://user:pw@cluster0.example.net/tokenservice?retryWrites=true',
    ]) {
      assert.equal(loadConfig({ MONGODB_URL: url }, pkg).mongodbUrl, url);
    }
  });

  test('MONGODB_URL: what the driver refuses stops the start naming the variable, not the password', () => {
    for (const url of [
      'mongodb://user:s3cret@h1,h2/db?directConnection=true',
      'mongodb+srv://a:s3cret@h1:27017/db',
      'http://x',
    ]) {
      assert.throws(
        () => loadConfig({ MONGODB_URL: url }, pkg),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.includes('MONGODB_URL') &&
          !error.message.includes('s3cret'),
        url,
      );
    }
  });

  test('REDIS_URL: one server, Sentinel and Cluster forms', () => {
    const cases: [string, RedisTarget][] = [
      [
        'redis://127.0.0.1:6380',
        { shape: 'server', node: { host: '127.0.0.1', port: 6380 }, db: 0, tls: false },
      ],
      [
        'rediss://u:p%40w@redis/2',
        {
          shape: 'server',
          node: { host: 'redis', port: 6379 },
          db: 2,
          tls: true,
          username: 'u',
          password: 'p@w',
        },
      ],
      ['redis://[::1]:7000', { shape: 'server', node: { host: '::1', port: 7000 }, db: 0, tls: false }],
      [
        'redis+sentinel://:pw@s1:26379,s2,s3:26380/mymaster/1',
        {
          shape: 'sentinel',
          sentinels: [
            { host: 's1', port: 26379 },
            { host: 's2', port: 26379 },
            { host: 's3', port: 26380 },
          ],
          masterName: 'mymaster',
          db: 1,
          password: 'pw',
        },
      ],
      [
        'redis+cluster://n1:7000,n2:7001',
        {
          shape: 'cluster',
          nodes: [
            { host: 'n1', port: 7000 },
            { host: 'n2', port: 7001 },
          ],
        },
      ],
    ];
    for (const [url, target] of cases) {
      assert.deepEqual(parseRedisUrl(url), target, url);
      assert.equal(loadConfig({ REDIS_URL: url }, pkg).redisUrl, url);
    }
  });

  test('REDIS_URL: a malformed URL, or one with query options, stops the start naming the variable', () => {
    for (const url of [
      'redis://:s3cret@h?enableOfflineQueue=true',
      'redis+sentinel://:s3cret@s1,s2',
      'redis+sentinel://s1:notaport/m',
      'redis+cluster://n1,n2/3',
      'redis://h1,h2',
      'redis://h:99999',
      'redis://h/db',
      'redis://::1',
      'redis://a:b:6379',
      'memcached://h',
    ]) {
      assert.throws(
        () => loadConfig({ REDIS_URL: url }, pkg),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.includes('REDIS_URL') &&
          !error.message.includes('s3cret'),
        url,
      );
    }
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
