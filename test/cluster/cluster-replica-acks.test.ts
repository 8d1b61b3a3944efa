/**
 * In a Redis Cluster a refresh-token change is answered only once a replica of the shard that
 * owns it has it, so that shard's failover loses no answered rotation. Run on a cluster of its
 * own (three primaries, a replica each), whose nodes the test freezes and kills.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { NotReplicated } from '../../src/errors.ts';
import { MAX_REFRESH_TOKEN_RETRY_SECONDS, type RefreshTokenFamily } from '../../src/oauth/model.ts';
import type { Connection } from '../../src/stores/connection.ts';
import { ackedWritesCommandTimeout, connectRedis, type RedisClient } from '../../src/stores/redis/connect.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import { acknowledgedWrites } from '../../src/stores/redis/writes.ts';
import { type ClusterSetup, onPath, startClusterSetup } from '../support/backends.ts';
import { eventually, onceSucceeds } from '../support/eventually.ts';

const missing = ['redis-server', 'redis-cli'].filter((binary) => !onPath(binary));

describe('refresh-token changes acknowledged by a replica of their shard', {
  skip: missing.length ? `${missing.join(' and ')} not on PATH: Cluster acknowledgements not tested` : false,
}, () => {
  let setup: ClusterSetup;
  const connections: Connection<RedisClient>[] = [];
  before(async () => {
    setup = await startClusterSetup();
  });
  after(async () => {
    for (const node of setup?.nodes.values() ?? []) node.signal('SIGCONT');
    await Promise.all(connections.map((connection) => connection.close()));
    await setup?.dispose();
  });

  /** A client of the cluster as the service makes them. */
  async function open(commandTimeout?: number): Promise<Cluster> {
    const connection = await connectRedis(
      setup.url,
      { deadline: Date.now() + 15_000, log: () => {} },
      commandTimeout ? { commandTimeout } : {},
    );
    connections.push(connection);
    if (!(connection.client instanceof Cluster))
      throw new Error('a redis+cluster:// URL makes a Cluster client');
    return connection.client;
  }

  /** What the node on `port` says of its replication. */
  async function replication(port: number): Promise<string> {
    const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
    try {
      return await redis.info('replication');
    } finally {
      redis.disconnect();
    }
  }

  test('changes to families of every shard are each confirmed by their own shard, batched per primary', async () => {
    const reader = await open();
    const waits = () =>
      Promise.all(
        reader
          .nodes('master')
          .map(async (node) =>
            Number(/cmdstat_wait:calls=(\d+)/.exec(await node.info('commandstats'))?.[1] ?? 0),
          ),
      );
    const before = await waits();
    const store = new RedisRefreshTokenStore(reader, {
      prefix: `acks_${randomUUID()}:`,
      writes: acknowledgedWrites(await open(ackedWritesCommandTimeout(1000)), 1, 1000),
    });
    const created = await onceSucceeds(
      () =>
        Promise.all(
          Array.from({ length: 60 }, () =>
            store.create(
              {
                familyId: randomUUID(),
                clientId: 'web',
                accountKind: 'user',
                subject: randomUUID(),
                scope: 'api',
                credentialStamp: 'stamp',
                expiresAt: Date.now() + 60_000,
              },
              { generation: 0, mac: randomBytes(16).toString('base64url') },
            ),
          ),
        ),
      { timeoutMs: 30_000 },
    );
    assert.deepEqual(new Set(created), new Set([true]));
    // 120 changes (each sign-in indexes the account, then creates the family) over 3 primaries.
    const used = (await waits()).map((count, index) => count - (before[index] ?? 0));
    assert.ok(
      used.every((count) => count > 0 && count <= 10),
      `WAITs per primary: ${used.join(', ')}`,
    );
  });

  test("an answered rotation survives its shard primary's kill -9; one its replica did not confirm is 503, and the client's retry is answered after the failover", async () => {
    const reader = await open();
    const store = new RedisRefreshTokenStore(reader, {
      prefix: `acks_${randomUUID()}:`,
      writes: acknowledgedWrites(await open(ackedWritesCommandTimeout(500)), 1, 500),
    });
    const grant: RefreshTokenFamily = {
      familyId: randomUUID(),
      clientId: 'web',
      accountKind: 'user',
      subject: randomUUID(),
      scope: 'api',
      credentialStamp: 'stamp',
      expiresAt: Date.now() + 120_000,
    };
    const retry = () => ({
      sealedSuccessor: 'sealed',
      until: Date.now() + 60_000,
      limit: Date.now() + MAX_REFRESH_TOKEN_RETRY_SECONDS * 1000,
    });
    const token = (generation: number) => ({ generation, mac: randomBytes(16).toString('base64url') });
    const first = token(0);
    const second = token(1);
    assert.equal(await store.create(grant, first), true);
    assert.deepEqual(await store.rotate(grant, first, second, retry()), { state: 'rotated' });

    // The shard that owns the family, and its replica.
    const owner = Number(
      reader.slots[Number(await reader.cluster('KEYSLOT', `{${grant.familyId}}`))]?.[0]?.split(':')[1],
    );
    const replicaPort = Number(/slave0:ip=[^,]*,port=(\d+)/.exec(await replication(owner))?.[1]);
    const primary = setup.nodes.get(owner);
    const replica = setup.nodes.get(replicaPort);
    if (!primary || !replica) throw new Error(`no node on ${owner} or ${replicaPort}`);

    // With the replica frozen nothing is confirmed: the rotation is made on the primary alone.
    replica.signal('SIGSTOP');
    await assert.rejects(store.rotate(grant, second, token(2), retry()), NotReplicated);
    primary.signal('SIGKILL');
    replica.signal('SIGCONT');
    await eventually(
      async () => (await replication(replicaPort)).includes('role:master'),
      'the replica promoted',
      30_000,
    );
    // The old primary comes back as the new one's replica, so that changes can be confirmed again.
    await primary.restart();

    // The answered rotation is there; the client's retry of the refused one is answered now,
    // on the new primary, as a rotation (lost with the old one) or as that rotation's retry.
    const retried = await onceSucceeds(() => store.rotate(grant, second, token(2), retry()), {
      timeoutMs: 30_000,
    });
    assert.ok(retried.state === 'rotated' || retried.state === 'retry', JSON.stringify(retried));
  });
});
