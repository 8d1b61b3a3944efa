/**
 * Redis that requires a password, as docker-compose.ha.yml runs it: the data nodes with
 * requirepass (and masterauth), the Sentinels with requirepass too. The password of a
 * redis+sentinel:// REDIS_URL opens both, so one URL reaches the primary through them; Sentinels
 * that require no password still take it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Backend, onPath, sentinelsReady, startRedis, startSentinel } from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import { connectTestRedis } from '../support/redis.ts';

const PASSWORD = 'test0password';
const MASTER = 'tokenservice';
const skip = onPath('redis-server') ? false : 'redis-server is not on PATH: Redis with passwords not run';
if (skip) console.log(`# ${skip}`);

for (const sentinelsRequire of [true, false]) {
  describe(`Redis that requires a password, reached through Sentinels that ${sentinelsRequire ? 'require it too' : 'require none'}`, {
    skip,
  }, () => {
    const servers: Backend[] = [];
    let primary: Backend;
    let sentinelHosts = '';

    before(async () => {
      // No 5 s pause before the replica's full sync, as docker-compose.ha.yml runs them.
      const noSyncDelay = ['--repl-diskless-sync-delay', '0'];
      primary = await startRedis([...noSyncDelay, '--requirepass', PASSWORD, '--masterauth', PASSWORD]);
      servers.push(primary);
      const primaryPort = Number(new URL(primary.url).port);
      const replica = await startRedis([
        ...noSyncDelay,
        '--requirepass',
        PASSWORD,
        '--masterauth',
        PASSWORD,
        '--replicaof',
        '127.0.0.1',
        String(primaryPort),
      ]);
      servers.push(replica);
      const sentinels = await Promise.all(
        [1, 2, 3].map(() =>
          startSentinel(MASTER, primaryPort, [
            `sentinel auth-pass ${MASTER} ${PASSWORD}`,
            ...(sentinelsRequire ? [`requirepass ${PASSWORD}`] : []),
          ]),
        ),
      );
      servers.push(...sentinels);
      // A primary killed before the Sentinels know its replica and each other is never replaced.
      await sentinelsReady(sentinels, MASTER, replica.url, PASSWORD);
      sentinelHosts = sentinels.map(({ port }) => `127.0.0.1:${port}`).join(',');
    });
    after(() => Promise.all(servers.map((server) => server.dispose())));

    test('the password of the URL opens the Sentinels and the primary they name', async () => {
      const { client, close } = await connectTestRedis(
        `redis+sentinel://:${PASSWORD}@${sentinelHosts}/${MASTER}`,
      );
      try {
        await client.set('password-test', 'written');
        assert.equal(await client.get('password-test'), 'written');
      } finally {
        await close();
      }
    });

    test('with the primary gone, the Sentinels agree, promote the replica, and the URL reaches it', async () => {
      const { client, close } = await connectTestRedis(
        `redis+sentinel://:${PASSWORD}@${sentinelHosts}/${MASTER}`,
      );
      try {
        await client.set('before-failover', 'kept');
        // The replica, authenticating with masterauth, has it before the primary goes.
        await eventually(
          async () => Number(await client.call('WAIT', '1', '500')) >= 1,
          'the replica confirms the write',
          20_000,
        );
        primary.signal('SIGKILL');
        await eventually(
          async () => {
            try {
              return (await client.set('after-failover', 'written')) === 'OK';
            } catch {
              return false;
            }
          },
          'a write through the URL after the failover',
          30_000,
        );
        assert.equal(await client.get('before-failover'), 'kept');
      } finally {
        await close();
      }
    });
  });
}
