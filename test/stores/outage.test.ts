/**
 * What the service sees when a backend goes away and comes back: calls fail fast with
 * BackendUnavailable (503) instead of hanging, and succeed again without a restart.
 * Each test starts its own server on a free loopback port so it can stop it at will.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import type { Account } from '../../src/accounts/model.ts';
import { BackendUnavailable } from '../../src/errors.ts';
import type { RefreshTokenFamily } from '../../src/oauth/model.ts';
import type { Stores } from '../../src/stores/stores.ts';
import { accountRecord } from '../support/accounts.ts';
import {
  type Backend,
  freePort,
  onPath,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { onceSucceeds } from '../support/eventually.ts';
import { openTestStores } from '../support/stores.ts';

const FAIL_WITHIN_MS = 5000;
const RECOVER_WITHIN_MS = 20000;

/** Expects `call` to reject with BackendUnavailable, and quickly. */
async function assertUnavailableFast(call: () => Promise<unknown>, backend: string): Promise<void> {
  const started = Date.now();
  await assert.rejects(call(), (error: unknown) => {
    assert.ok(error instanceof BackendUnavailable, `got ${String(error)}`);
    assert.match(error.message, new RegExp(backend));
    assert.equal(error.status, 503);
    return true;
  });
  const took = Date.now() - started;
  assert.ok(took < FAIL_WITHIN_MS, `failed after ${took} ms, not within ${FAIL_WITHIN_MS} ms`);
}

/** Polls `call` until it succeeds; the service must recover by itself. */
function eventually<T>(call: () => Promise<T>): Promise<T> {
  return onceSucceeds(call, { timeoutMs: RECOVER_WITHIN_MS, everyMs: 250 });
}

/**
 * A frozen server (SIGSTOP: it neither answers nor drops connections) is found out by the
 * heartbeat within a few seconds; from then on calls are refused at once rather than each
 * waiting out the driver's timeout; thawed, the first call goes through again.
 */
async function assertFailsFastWhileFrozen(server: Backend, call: () => Promise<unknown>): Promise<void> {
  server.signal('SIGSTOP');
  try {
    // The heartbeat pings every second and gives a ping 1.5 s.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const started = Date.now();
    for (let i = 0; i < 20; i++) await assert.rejects(call(), BackendUnavailable);
    const took = Date.now() - started;
    assert.ok(took < 1000, `20 calls took ${took} ms: they waited for the frozen server`);
  } finally {
    server.signal('SIGCONT');
  }
  await eventually(call);
}

function refreshTokenGrant(): RefreshTokenFamily {
  return {
    familyId: randomUUID(),
    clientId: 'web',
    accountKind: 'user',
    subject: randomUUID(),
    scope: 'profile',
    credentialStamp: 'stamp',
    expiresAt: Date.now() + 60_000,
  };
}

function account(identity: string): Account {
  return accountRecord({ identity });
}

describe('Redis outage', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: outage test not run',
}, () => {
  let server: Backend;
  let stores: Stores;
  before(async () => {
    server = await startRedis();
    stores = await openTestStores({ redisUrl: server.url, startupTimeoutMs: 10000 });
  });
  after(async () => {
    await stores?.close();
    await server?.dispose();
  });

  test('fails fast with BackendUnavailable while down and recovers after a restart', async () => {
    const grant = refreshTokenGrant();
    const first = { generation: 0, mac: 'm1' };
    const successor = { generation: 1, mac: 'm2' };
    assert.equal(await stores.refreshTokens.create(grant, first), true);
    assert.equal((await stores.refreshTokens.inspect(grant.familyId, first)).state, 'current');

    await server.stop();
    await assertUnavailableFast(() => stores.refreshTokens.inspect(grant.familyId, first), 'Redis');
    await assertUnavailableFast(() => stores.refreshTokens.rotate(grant, first, successor), 'Redis');
    await assertUnavailableFast(() => stores.refreshTokens.create(grant, first), 'Redis');

    await server.restart();
    // The restarted server is empty (no persistence); what matters is that calls work again.
    await eventually(() => stores.refreshTokens.create(grant, first));
    assert.deepEqual(await stores.refreshTokens.rotate(grant, first, successor), { state: 'rotated' });
  });

  test('while frozen, calls are refused at once; thawed, they work again', async () => {
    await assertFailsFastWhileFrozen(server, () => stores.codeFlow.consumeCode(randomUUID(), randomUUID()));
  });

  test('a replica refusing writes (READONLY) and a full memory (OOM) are outages, not errors', async () => {
    const grant = refreshTokenGrant();
    const create = () => stores.refreshTokens.create(grant, { generation: 0, mac: 'm1' });
    const admin = new Redis(server.url);
    try {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
      await assert.rejects(create(), (error: unknown) => {
        assert.ok(error instanceof BackendUnavailable, String(error));
        assert.match(String((error.cause as Error).message), /^OOM /);
        return true;
      });
      await admin.config('SET', 'maxmemory', '0');
      await admin.replicaof('127.0.0.1', await freePort());
      await assert.rejects(create(), (error: unknown) => {
        assert.ok(error instanceof BackendUnavailable, String(error));
        assert.match(String((error.cause as Error).message), /^READONLY /);
        return true;
      });
      await admin.replicaof('NO', 'ONE');
      // READONLY also made the client reconnect (a failover moves the master elsewhere).
      assert.equal(await eventually(create), true);
    } finally {
      admin.disconnect();
    }
  });
});

describe('MongoDB (FerretDB) outage', {
  skip: onPath('ferretdb') ? false : 'ferretdb not on PATH: outage test not run',
}, () => {
  let server: Backend;
  let stores: Stores;
  before(async () => {
    server = await startFerretDb();
    stores = await openTestStores({
      mongodbUrl: withDatabase(server.url, uniqueName('outage')),
      startupTimeoutMs: 10000,
    });
  });
  after(async () => {
    await stores?.close();
    await server?.dispose();
  });

  test('fails fast with BackendUnavailable while down and recovers after a restart', async () => {
    const a = account('outage@example.com');
    await stores.users.create(a);

    await server.stop();
    await assertUnavailableFast(() => stores.users.findById(a.id), 'MongoDB');
    await assertUnavailableFast(() => stores.users.create(account('second@example.com')), 'MongoDB');

    await server.restart();
    // Same port and data dir: the account written before the outage is still there.
    const found = await eventually(() => stores.users.findById(a.id));
    assert.equal(found?.identity, 'outage@example.com');
    await stores.users.create(account('third@example.com'));
  });

  test('while frozen, calls are refused at once; thawed, they work again', async () => {
    await assertFailsFastWhileFrozen(server, () => stores.users.findById(randomUUID()));
  });
});

describe('startup against a closed port', () => {
  test('MongoDB: rejects after startupTimeoutMs, naming the backend and host', async () => {
    const port = await freePort();
    const started = Date.now();
    await assert.rejects(
      openTestStores({ mongodbUrl: `mongodb://app:s3cret@127.0.0.1:${port}/db`, startupTimeoutMs: 1500 }),
      (error: Error) => {
        assert.match(error.message, new RegExp(`MongoDB at 127\\.0\\.0\\.1:${port}`));
        assert.doesNotMatch(error.message, /s3cret/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 5000);
  });

  test('Redis: rejects after startupTimeoutMs, naming the backend and host', async () => {
    const port = await freePort();
    const started = Date.now();
    await assert.rejects(
      openTestStores({ redisUrl: `redis://:s3cret@127.0.0.1:${port}`, startupTimeoutMs: 1500 }),
      (error: Error) => {
        assert.match(error.message, new RegExp(`Redis at 127\\.0\\.0\\.1:${port}`));
        assert.doesNotMatch(error.message, /s3cret/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 5000);
  });

  test('the memory backends need no URL at all', async () => {
    const stores = await openTestStores({});
    assert.equal(await stores.users.count({}), 0);
    await stores.close();
  });
});
