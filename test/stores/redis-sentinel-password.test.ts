/**
 * A Sentinel deployment with a password, as docker-compose.ha.yml runs one: the data nodes and
 * the Sentinels require the same password, which the one REDIS_URL carries.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Backend, freePort, onPath, startRedisOn } from '../support/backends.ts';
import { connectTestRedis } from '../support/redis.ts';

const skip = onPath('redis-server') ? false : 'redis-server is not on PATH';
if (skip) console.log(`# Sentinel with a password not run: ${skip}`);

const PASSWORD = 'sentinel0test0password';
const servers: Backend[] = [];
after(() => Promise.all(servers.map((server) => server.dispose())));

test('with a password in a redis+sentinel:// URL, the Sentinels that require it are asked with it', {
  skip,
}, async () => {
  const [nodePort, sentinelPort] = [await freePort(), await freePort()];
  const auth = ['--requirepass', PASSWORD];
  servers.push(
    await startRedisOn(nodePort, (dir) => [
      '--port',
      String(nodePort),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      ...auth,
    ]),
  );
  servers.push(
    await startRedisOn(sentinelPort, (dir) => {
      // A Sentinel needs a configuration file, which it rewrites.
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(conf, `port ${sentinelPort}\nbind 127.0.0.1\ndir ${dir}\n`);
      return [
        conf,
        '--sentinel',
        'monitor',
        'tokenservice',
        '127.0.0.1',
        String(nodePort),
        '1',
        '--sentinel',
        'auth-pass',
        'tokenservice',
        PASSWORD,
        ...auth,
      ];
    }),
  );
  const connection = await connectTestRedis(
    `redis+sentinel://:${PASSWORD}@127.0.0.1:${sentinelPort}/tokenservice`,
  );
  try {
    assert.equal(await connection.client.ping(), 'PONG');
  } finally {
    await connection.close();
  }
});
