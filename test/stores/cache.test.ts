/**
 * The per-process caches in front of the account and client stores: what they serve, when they
 * forget, and that they never answer while their invalidation channel is down. The channel here
 * is a stand-in the test drives; the Redis one has its own tests below, on a Redis of their own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { AccountStore } from '../../src/accounts/model.ts';
import { cachedAccounts, cachedClients } from '../../src/stores/cache/cached-stores.ts';
import { FLUSH, type Invalidations, RedisInvalidations } from '../../src/stores/cache/invalidation.ts';
import { MemoryAccountStore, MemoryClientStore } from '../../src/stores/memory/index.ts';
import { connectRedis } from '../../src/stores/redis/connect.ts';
import { accountRecord } from '../support/accounts.ts';
import { type Backend, onPath, startRedis } from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';

class FakeChannel implements Invalidations {
  live = true;
  sequence = 0;
  published: [string, string][] = [];
  #listeners: ((topic: string, key: string) => void)[] = [];
  listen(listener: (topic: string, key: string) => void): void {
    this.#listeners.push(listener);
  }
  async changed(topic: string, key: string): Promise<void> {
    this.deliver(topic, key);
    this.published.push([topic, key]);
  }
  /** A message from another node. */
  deliver(topic: string, key: string): void {
    this.sequence++;
    for (const listener of this.#listeners) listener(topic, key);
  }
}

const account = accountRecord;

/** A memory store that counts its reads by id, and can hold its reads until released. */
function countingStore() {
  const store = new MemoryAccountStore();
  const counter = {
    reads: 0,
    hold: undefined as Promise<void> | undefined,
    /** Reads from now on wait, after loading, until the function returned is called. */
    holdReads(): () => void {
      let release = () => {};
      counter.hold = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
  const findById = store.findById.bind(store);
  store.findById = async (id) => {
    counter.reads++;
    const found = await findById(id);
    await counter.hold;
    return found;
  };
  return { store, counter };
}

function setUp(size = 100, ttlMs = 60_000) {
  const { store, counter } = countingStore();
  const channel = new FakeChannel();
  const cached: AccountStore = cachedAccounts(store, channel, 'user', { size, ttlMs });
  return { store, counter, channel, cached };
}

describe('account cache', () => {
  test('a second read of an account is served from memory', async () => {
    const { store, counter, cached } = setUp();
    const a = account();
    await store.create(a);
    assert.equal((await cached.findById(a.id))?.identity, a.identity);
    assert.equal((await cached.findById(a.id))?.identity, a.identity);
    assert.equal(counter.reads, 1);
  });

  test('each read is a copy: a caller changing what it read changes nothing another read sees', async () => {
    const { store, cached } = setUp();
    const a = account({ roles: ['admin'] });
    await store.create(a);
    const loaded = await cached.findById(a.id);
    assert.ok(loaded);
    loaded.status = 'inactive';
    loaded.roles.push('superuser');
    const hit = await cached.findById(a.id);
    assert.ok(hit);
    hit.identity = 'changed@example.com';
    assert.deepEqual(await cached.findById(a.id), a);
  });

  test('an invalidation from another node makes the next read go to the store', async () => {
    const { store, counter, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    await cached.findById(a.id);
    await store.update(a.id, { status: 'inactive' });
    channel.deliver('user', a.id);
    assert.equal((await cached.findById(a.id))?.status, 'inactive');
    assert.equal(counter.reads, 2);
  });

  test('an invalidation of the other account kind leaves the entry alone', async () => {
    const { store, counter, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    await cached.findById(a.id);
    channel.deliver('admin', a.id);
    await cached.findById(a.id);
    assert.equal(counter.reads, 1);
  });

  test('updates and deletions publish the account once they are written', async () => {
    const { store, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    await cached.findById(a.id);
    await cached.update(a.id, { status: 'inactive' });
    assert.deepEqual(channel.published, [['user', a.id]]);
    assert.equal((await cached.findById(a.id))?.status, 'inactive');
    assert.equal(await cached.delete(a.id), true);
    assert.deepEqual(channel.published, [
      ['user', a.id],
      ['user', a.id],
    ]);
    assert.equal(await cached.findById(a.id), null);
  });

  test('a load that an invalidation overtook is returned but not kept', async () => {
    const { store, counter, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    const release = counter.holdReads();
    const loading = cached.findById(a.id);
    await new Promise((resolve) => setImmediate(resolve));
    // The write lands and its message arrives while the old value is on its way back.
    await store.update(a.id, { status: 'inactive' });
    channel.deliver('user', a.id);
    release();
    assert.equal((await loading)?.status, 'active');
    counter.hold = undefined;
    assert.equal((await cached.findById(a.id))?.status, 'inactive');
    assert.equal(counter.reads, 2);
  });

  test('while the channel is down every read goes to the store, and what was cached is flushed', async () => {
    const { store, counter, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    await cached.findById(a.id);
    channel.live = false;
    channel.deliver(FLUSH, FLUSH);
    await store.update(a.id, { status: 'inactive' });
    assert.equal((await cached.findById(a.id))?.status, 'inactive');
    assert.equal((await cached.findById(a.id))?.status, 'inactive');
    assert.equal(counter.reads, 3);
    channel.live = true;
    await cached.findById(a.id);
    await cached.findById(a.id);
    assert.equal(counter.reads, 4);
  });

  test('a load that finished after the channel went down is not kept', async () => {
    const { store, counter, channel, cached } = setUp();
    const a = account();
    await store.create(a);
    const release = counter.holdReads();
    const loading = cached.findById(a.id);
    await new Promise((resolve) => setImmediate(resolve));
    channel.live = false;
    release();
    await loading;
    counter.hold = undefined;
    channel.live = true;
    await cached.findById(a.id);
    assert.equal(counter.reads, 2);
  });

  test('the cache keeps at most its size, dropping the least recently used', async () => {
    const { store, counter, cached } = setUp(2);
    const [a, b, c] = [account(), account(), account()];
    for (const each of [a, b, c]) await store.create(each);
    for (const each of [a, b, a, c]) await cached.findById(each.id);
    assert.equal(counter.reads, 3);
    await cached.findById(a.id);
    assert.equal(counter.reads, 3, 'a was used recently: kept');
    await cached.findById(b.id);
    assert.equal(counter.reads, 4, 'b was the least recently used: dropped');
  });

  test('an entry older than the TTL is read again', async () => {
    const { store, counter, cached } = setUp(100, 0);
    const a = account();
    await store.create(a);
    await cached.findById(a.id);
    await cached.findById(a.id);
    assert.equal(counter.reads, 2);
  });

  test('a missing account is not remembered', async () => {
    const { store, cached } = setUp();
    const a = account();
    assert.equal(await cached.findById(a.id), null);
    await store.create(a);
    assert.equal((await cached.findById(a.id))?.id, a.id);
  });
});

describe('client cache', () => {
  test('a client update publishes its name and the next read sees the new secret', async () => {
    const store = new MemoryClientStore();
    const channel = new FakeChannel();
    const cached = cachedClients(store, channel, { size: 10, ttlMs: 60_000 });
    const at = new Date();
    await store.createIfAbsent({
      id: randomUUID(),
      name: 'svc',
      type: 'confidential',
      secretDigest: 'old',
      previousSecretDigest: null,
      previousSecretExpiresAt: null,
      accountKind: 'user',
      redirectUris: [],
      grants: ['client_credentials'],
      createdAt: at,
      updatedAt: at,
    });
    assert.equal((await cached.findByName('svc'))?.secretDigest, 'old');
    await cached.update('svc', { secretDigest: 'new' });
    assert.deepEqual(channel.published, [['client', 'svc']]);
    assert.equal((await cached.findByName('svc'))?.secretDigest, 'new');
  });
});

const noRedisServer = onPath('redis-server') ? false : 'redis-server is not on PATH';

describe('the Redis invalidation channel', { skip: noRedisServer }, () => {
  let redis: Backend;
  const opened: { close(): Promise<void> }[] = [];
  const timing = { heartbeatMs: 50, overdueMs: 200 };

  before(async () => {
    redis = await startRedis();
  });

  after(async () => {
    for (const each of opened.reverse()) await each.close();
    await redis?.dispose();
  });

  async function channel() {
    const connection = await connectRedis(redis.url, { deadline: Date.now() + 5000, log: () => {} });
    const unpublished: Error[] = [];
    const invalidations = new RedisInvalidations(connection.client, timing, (error) =>
      unpublished.push(error),
    );
    opened.push(connection, invalidations);
    const heard: [string, string][] = [];
    invalidations.listen((topic, key) => heard.push([topic, key]));
    return { invalidations, heard, publisher: connection.client, unpublished };
  }

  test('a change published by one process reaches the others; all are live once heard', async () => {
    const [one, two] = await Promise.all([channel(), channel()]);
    await eventually(() => one.invalidations.live && two.invalidations.live, 'both channels live', 5000);
    await one.invalidations.changed('user', 'id-1');
    await eventually(
      () => two.heard.some(([topic, key]) => topic === 'user' && key === 'id-1'),
      'message heard',
    );
  });

  test("a change the writer's own link failed to publish reaches the others once the link is back", async () => {
    const [writer, reader] = await Promise.all([channel(), channel()]);
    await eventually(() => writer.invalidations.live && reader.invalidations.live, 'both live', 5000);
    const writerLink = String(await writer.publisher.call('CLIENT', 'ID'));
    await reader.publisher.call('CLIENT', 'KILL', 'ID', writerLink);
    await writer.invalidations.changed('user', 'id-2');
    assert.equal(writer.unpublished.length, 1, 'the first publish met the dropped link');
    await eventually(
      () => reader.heard.some(([topic, key]) => topic === 'user' && key === 'id-2'),
      'the change heard once the writer reconnected',
      5000,
    );
  });

  test('a subscription that hears nothing for the overdue time counts as down, though connected', async () => {
    const { invalidations, heard } = await channel();
    await eventually(() => invalidations.live, 'live', 5000);
    const admin = await connectRedis(redis.url, { deadline: Date.now() + 5000, log: () => {} });
    opened.push(admin);
    // Redis holds every client's commands, heartbeats included; no connection drops.
    await admin.client.call('CLIENT', 'PAUSE', '800', 'ALL');
    await eventually(() => !invalidations.live, 'down while paused', 700);
    assert.ok(heard.some(([topic]) => topic === FLUSH));
    await eventually(() => invalidations.live, 'live after the pause', 5000);
  });

  test('while Redis is away the channel is down and every cache is told to flush; back, it is live again', async () => {
    const { invalidations, heard } = await channel();
    await eventually(() => invalidations.live, 'live', 5000);
    await redis.stop();
    try {
      await eventually(() => !invalidations.live, 'down', 5000);
      assert.ok(heard.some(([topic]) => topic === FLUSH));
    } finally {
      await redis.restart();
    }
    await eventually(() => invalidations.live, 'live again', 10_000);
  });
});
