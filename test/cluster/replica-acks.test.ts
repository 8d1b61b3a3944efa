/**
 * Behind Sentinels a refresh-token change is answered only once a replica has it (Redis
 * WAIT), so a failover to that replica loses no answered rotation. Measured on a Sentinel
 * setup of its own, whose replica the tests freeze (SIGSTOP) to stop its acknowledgements.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { NotReplicated } from '../../src/errors.ts';
import { MAX_REFRESH_TOKEN_RETRY_SECONDS, type RefreshTokenFamily } from '../../src/oauth/model.ts';
import type { Connection } from '../../src/stores/connection.ts';
import { connectRedis, type RedisClient } from '../../src/stores/redis/connect.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import { acknowledgedWrites } from '../../src/stores/redis/writes.ts';
import { onPath, type SentinelSetup, startRedis, startSentinelSetup } from '../support/backends.ts';
import { eventually, onceSucceeds } from '../support/eventually.ts';
import { FRONTEND_CLIENT, passwordGrant, refreshGrant, request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

function newGrant(): RefreshTokenFamily {
  return {
    familyId: randomUUID(),
    clientId: 'web',
    accountKind: 'user',
    subject: randomUUID(),
    scope: 'api',
    credentialStamp: 'stamp',
    expiresAt: Date.now() + 60_000,
  };
}

/** The generation a refresh token carries (its second part). */
const generationOf = (token: unknown) => Number(String(token).split('.')[1]);

describe('refresh-token changes acknowledged by a Redis replica', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: replica acknowledgements not tested',
}, () => {
  let setup: SentinelSetup;
  let server: TestServer;
  const connections: Connection<RedisClient>[] = [];
  /** A connection to the Sentinel setup's master, made as the service makes them; closed after. */
  async function open(): Promise<RedisClient> {
    const connection = await connectRedis(setup.url, { deadline: Date.now() + 10_000, log: () => {} });
    connections.push(connection);
    return connection.client;
  }
  before(async () => {
    setup = await startSentinelSetup();
    // REDIS_MIN_REPLICA_ACKS is 1 by default with a Sentinel URL.
    server = await startTestServer({ env: { REDIS_URL: setup.url, REDIS_REPLICA_ACK_TIMEOUT_MS: '300' } });
  });
  after(async () => {
    setup?.replica.signal('SIGCONT');
    await server?.close();
    await Promise.all(connections.map((connection) => connection.close()));
    await setup?.dispose();
  });

  /** Runs `during` with the replica frozen: it neither applies nor acknowledges anything. */
  async function withReplicaFrozen<T>(during: () => Promise<T>): Promise<T> {
    setup.replica.signal('SIGSTOP');
    try {
      return await during();
    } finally {
      setup.replica.signal('SIGCONT');
    }
  }

  test('a rotation the replica does not confirm is 503, sign-ins too; the retry gets that rotation’s successor', async () => {
    // The replica may still be catching up from the setup: a 503 then is the retry's to take.
    const { refresh_token } = await onceSucceeds(() =>
      passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER),
    );
    const first = await onceSucceeds(async () => {
      const response = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      if (response.status === 503) throw new Error('not confirmed yet');
      return response;
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const token = String(first.body.refresh_token);

    const [refused, login] = await withReplicaFrozen(() =>
      Promise.all([
        refreshGrant(server.url, FRONTEND_CLIENT, token),
        request(server.url, 'POST', '/security/generate-token', {
          json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
        }),
      ]),
    );
    for (const response of [refused, login]) {
      assert.equal(response.status, 503, JSON.stringify(response.body));
      assert.equal(response.body.error, 'temporarily_unavailable');
    }

    // The rotation was made on the primary: once the replica has it, the client's retry with
    // the same token is answered with its successor, and nothing else was minted.
    const retry = await onceSucceeds(async () => {
      const response = await refreshGrant(server.url, FRONTEND_CLIENT, token);
      if (response.status === 503) throw new Error('still not confirmed');
      return response;
    });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(generationOf(retry.body.refresh_token), generationOf(token) + 1);
    const again = await refreshGrant(server.url, FRONTEND_CLIENT, token);
    assert.equal(again.body.refresh_token, retry.body.refresh_token, 'the one successor of that rotation');
    const next = await refreshGrant(server.url, FRONTEND_CLIENT, String(retry.body.refresh_token));
    assert.equal(next.status, 200, JSON.stringify(next.body));
  });

  test("a refresh that finds another connection's rotation is not answered before the replica has that rotation", async () => {
    // Two processes' stores: each reads and writes on connections of its own.
    const prefix = `acks_${randomUUID()}:`;
    const [a, b] = await Promise.all(
      [0, 1].map(async () => {
        const writes = acknowledgedWrites(await open(), 1, 300);
        return new RedisRefreshTokenStore(await open(), { prefix, writes });
      }),
    );
    if (!a || !b) throw new Error('two stores');
    const grant = newGrant();
    const first = { generation: 0, mac: randomBytes(16).toString('base64url') };
    assert.equal(await a.create(grant, first), true);
    const retry = {
      sealedSuccessor: 'sealed',
      until: Date.now() + 60_000,
      limit: Date.now() + MAX_REFRESH_TOKEN_RETRY_SECONDS * 1000,
    };
    const successor = { generation: 1, mac: randomBytes(16).toString('base64url') };

    await withReplicaFrozen(async () => {
      await assert.rejects(a.rotate(grant, first, successor, retry), NotReplicated);
      // B finds A's rotation on the primary; the replica has not got it, so neither answers.
      await assert.rejects(b.rotate(grant, first, successor, retry), NotReplicated);
    });
    const found = await onceSucceeds(() => b.rotate(grant, first, successor, retry));
    assert.equal(found.state, 'retry');
    assert.equal(found.state === 'retry' && found.sealedSuccessor, 'sealed');
  });

  test('a rotation the replica confirms only after its window is still retried; its window then runs from that confirmation', async () => {
    let now = Date.now();
    const store = new RedisRefreshTokenStore(await open(), {
      prefix: `acks_${randomUUID()}:`,
      writes: acknowledgedWrites(await open(), 1, 300),
      now: () => now,
    });
    const grant = newGrant();
    const first = { generation: 0, mac: randomBytes(16).toString('base64url') };
    assert.equal(await store.create(grant, first), true);
    const window = 1000;
    const attempt = () =>
      store.rotate(
        grant,
        first,
        { generation: 1, mac: randomBytes(16).toString('base64url') },
        {
          sealedSuccessor: 'sealed',
          until: now + window,
          limit: now + MAX_REFRESH_TOKEN_RETRY_SECONDS * 1000,
        },
      );

    await withReplicaFrozen(async () => {
      await assert.rejects(attempt(), NotReplicated);
      // The replica stays down for longer than the window; the client keeps retrying.
      now += 5 * window;
      await assert.rejects(attempt(), NotReplicated);
      now += 5 * window;
    });
    // No answer handed the successor out yet: the retry gets it, not a verdict of reuse.
    const found = await onceSucceeds(attempt);
    assert.equal(found.state, 'retry');
    assert.equal(found.state === 'retry' && found.sealedSuccessor, 'sealed');
    now += window / 2;
    assert.equal((await store.inspect(grant.familyId, first)).state, 'retry');
    now += window;
    assert.equal((await store.inspect(grant.familyId, first)).state, 'reused');
  });

  test('concurrent changes share their waits for the replica', async () => {
    const primary = new Redis(`redis://127.0.0.1:${await setup.masterPort()}`);
    const writer = await open();
    const store = new RedisRefreshTokenStore(primary, {
      prefix: `acks_${randomUUID()}:`,
      writes: acknowledgedWrites(writer, 1, 1000),
    });
    try {
      const waits = async () =>
        Number(/cmdstat_wait:calls=(\d+)/.exec(await primary.info('commandstats'))?.[1] ?? 0);
      const before = await waits();
      // 50 sign-ins at once: two changes each (the account's index, then the family).
      const created = await Promise.all(
        Array.from({ length: 50 }, () => {
          const grant = newGrant();
          return store.create(grant, { generation: 0, mac: randomBytes(16).toString('base64url') });
        }),
      );
      assert.deepEqual(new Set(created), new Set([true]));
      const used = (await waits()) - before;
      assert.ok(used > 0 && used <= 10, `${used} WAITs for 100 changes`);
    } finally {
      primary.disconnect();
    }
  });
});

/**
 * A replica that is gone (killed, its connection closed) cannot confirm anything: once the
 * primary says so, a change is refused at once, neither made nor waited for, until a replica
 * is back (a refused retry only starts its window again). Each test runs Redis processes of
 * its own, since it kills them.
 */
describe('refusals at once while the primary has no replica to confirm', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: replica acknowledgements not tested',
}, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(() => Promise.all(cleanups.map((cleanup) => cleanup())));

  /** A store over `url` that reads on one connection and makes acknowledged changes on another. */
  async function storeOver(url: string, prefix: string, logged: string[] = []) {
    const [reader, writer] = await Promise.all(
      [0, 1].map(() => connectRedis(url, { deadline: Date.now() + 15_000, log: () => {} })),
    );
    if (!reader || !writer) throw new Error('two connections');
    cleanups.push(() => Promise.all([reader.close(), writer.close()]));
    return new RedisRefreshTokenStore(reader.client, {
      prefix,
      writes: acknowledgedWrites(writer.client, 1, 500, (line) => logged.push(line)),
    });
  }

  /**
   * A family created and confirmed, as a sign-in retried on 503 makes it: each attempt a new
   * family, since one that was not confirmed may still have been made.
   */
  async function signedIn(store: RedisRefreshTokenStore) {
    return onceSucceeds(
      async () => {
        const grant = newGrant();
        const first = { generation: 0, mac: randomBytes(16).toString('base64url') };
        assert.equal(await store.create(grant, first), true);
        return { grant, first };
      },
      { timeoutMs: 20_000 },
    );
  }

  /**
   * WAITs the Redis at `url` has run, and the family's record there, without its version
   * (a refused retry's mark changes that): its token, revocation, expiry and grant.
   */
  async function observe(url: string, prefix: string, familyId: string) {
    const redis = new Redis(url);
    try {
      const stats = await redis.info('commandstats');
      const stored = await redis.get(`${prefix}{${familyId}}`);
      return {
        waits: Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0),
        family: stored === null ? null : (JSON.parse(stored) as unknown[]).slice(1),
      };
    } finally {
      redis.disconnect();
    }
  }

  /**
   * Rotates `presented` until a refusal comes without a WAIT, then checks that the following
   * ones are refused so too and rotate nothing again; returns the rotation to try again.
   */
  async function refusedAtOnce(
    store: RedisRefreshTokenStore,
    primaryUrl: () => Promise<string>,
    prefix: string,
    grant: RefreshTokenFamily,
    presented: { generation: number; mac: string },
  ) {
    const retry = {
      sealedSuccessor: 'sealed',
      until: Date.now() + 60_000,
      limit: Date.now() + MAX_REFRESH_TOKEN_RETRY_SECONDS * 1000,
    };
    const attempt = () =>
      store.rotate(
        grant,
        presented,
        { generation: presented.generation + 1, mac: randomBytes(16).toString('base64url') },
        retry,
      );
    await onceSucceeds(
      async () => {
        const before = await observe(await primaryUrl(), prefix, grant.familyId);
        await assert.rejects(attempt(), NotReplicated);
        const after = await observe(await primaryUrl(), prefix, grant.familyId);
        if (after.waits !== before.waits) throw new Error('the refusal still waited for a replica');
      },
      { timeoutMs: 20_000 },
    );
    const before = await observe(await primaryUrl(), prefix, grant.familyId);
    for (let i = 0; i < 5; i++) await assert.rejects(attempt(), NotReplicated);
    assert.deepEqual(
      await observe(await primaryUrl(), prefix, grant.familyId),
      before,
      'nothing waited, nothing rotated again',
    );
    return attempt;
  }

  test('after a replica’s kill -9 its primary refuses changes at once, and makes them again once the replica is back', async () => {
    const noSyncDelay = ['--repl-diskless-sync-delay', '0'];
    const primary = await startRedis(noSyncDelay);
    cleanups.push(() => primary.dispose());
    const replica = await startRedis([...noSyncDelay, '--replicaof', '127.0.0.1', new URL(primary.url).port]);
    cleanups.push(() => replica.dispose());
    const prefix = `acks_${randomUUID()}:`;
    const logged: string[] = [];
    const store = await storeOver(primary.url, prefix, logged);
    // Confirmed once the replica has finished its first sync.
    const { grant, first } = await signedIn(store);

    replica.signal('SIGKILL');
    const attempt = await refusedAtOnce(store, async () => primary.url, prefix, grant, first);
    // One line, however many refusals, says why and what to do.
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(
      logged[0] ?? '',
      /has 0 of the 1 replicas that REDIS_MIN_REPLICA_ACKS requires.*REDIS_MIN_REPLICA_ACKS=0/,
    );

    await replica.restart();
    // The rotation the first refusal made on the primary is there, and now confirmed.
    const found = await onceSucceeds(attempt, { timeoutMs: 20_000 });
    assert.equal(found.state, 'retry');
  });

  test('behind Sentinels, after the primary’s kill -9 the promoted replica refuses at once until the old primary follows it', async () => {
    const setup = await startSentinelSetup();
    cleanups.push(() => setup.dispose());
    const prefix = `acks_${randomUUID()}:`;
    const store = await storeOver(setup.url, prefix);
    const { grant, first } = await signedIn(store);

    const oldMaster = await setup.masterPort();
    setup.primary.signal('SIGKILL');
    await eventually(async () => (await setup.masterPort()) !== oldMaster, 'a replica promoted', 30_000);
    const master = async () => `redis://127.0.0.1:${await setup.masterPort()}`;
    // The sign-in was confirmed: the promoted replica has it.
    assert.equal((await onceSucceeds(() => store.inspect(grant.familyId, first))).state, 'current');
    const attempt = await refusedAtOnce(store, master, prefix, grant, first);

    // Back, the old primary is made a replica of the new one by the Sentinels.
    await setup.primary.restart();
    const found = await onceSucceeds(attempt, { timeoutMs: 30_000 });
    assert.equal(found.state, 'retry');
  });
});
