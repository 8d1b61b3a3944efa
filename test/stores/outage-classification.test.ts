/**
 * Which driver errors mean "the backend cannot be reached right now" (503) and which mean a
 * request or a bug. The outage tests see the common shapes from real servers; these are the
 * rest of each table, built the way the drivers build them.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { ReplyError } from 'ioredis';
import { MongoNetworkError, MongoNetworkTimeoutError, MongoServerError } from 'mongodb';
import { isMongoOutage } from '../../src/stores/mongo/connect.ts';
import { isRedisOutage } from '../../src/stores/redis/connect.ts';

test('MongoDB: network errors, transient server codes and pool-resetting labels are outages', () => {
  assert.ok(isMongoOutage(new MongoNetworkError('connection 3 to 127.0.0.1:27017 closed')));
  assert.ok(isMongoOutage(new MongoNetworkTimeoutError('connection timed out')));
  assert.ok(isMongoOutage(new MongoServerError({ code: 11600, errmsg: 'interrupted at shutdown' })));
  assert.ok(isMongoOutage(new MongoServerError({ code: 10107, errmsg: 'not primary' })));
  assert.ok(
    isMongoOutage(
      new MongoServerError({ code: 2, errmsg: 'overloaded', errorLabels: ['SystemOverloadedError'] }),
    ),
  );
});

test("MongoDB: the pool's errors (closed, cleared, no connection free in time) are outages", () => {
  // Not exported by the driver, which names them differently from their classes.
  const pool = createRequire(import.meta.url)('mongodb/lib/cmap/errors.js') as Record<
    string,
    new (
      ...args: unknown[]
    ) => Error
  >;
  const address = { address: '127.0.0.1:27017' };
  const errors = [
    new (pool.WaitQueueTimeoutError as new (...args: unknown[]) => Error)('Timed out', address.address),
    new (pool.PoolClosedError as new (...args: unknown[]) => Error)(address),
    new (pool.PoolClearedError as new (...args: unknown[]) => Error)(address),
    new (pool.PoolClearedOnNetworkError as new (...args: unknown[]) => Error)(address),
  ];
  for (const error of errors) assert.ok(isMongoOutage(error), error.name);
});

test('MongoDB: a socket error the driver lets through as a plain Node error is an outage', () => {
  for (const code of ['EPIPE', 'ECONNRESET']) {
    assert.ok(isMongoOutage(Object.assign(new Error(`write ${code}`), { code })), code);
  }
  assert.ok(!isMongoOutage(Object.assign(new Error('no such file'), { code: 'ENOENT' })));
});

test('MongoDB: a refused write, or anything that is not a driver error, is not an outage', () => {
  assert.ok(!isMongoOutage(new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key error' })));
  assert.ok(!isMongoOutage(new MongoServerError({ code: 2, errmsg: 'BadValue' })));
  assert.ok(!isMongoOutage(Object.assign(new Error('looks like one'), { name: 'MongoNetworkError' })));
  assert.ok(!isMongoOutage('MongoNetworkError'));
});

test('Redis: socket errors, lost connections and "not now" replies are outages', () => {
  assert.ok(
    isRedisOutage(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
  );
  assert.ok(isRedisOutage(new Error('Connection is closed.')));
  assert.ok(isRedisOutage(new Error('Command timed out')));
  assert.ok(isRedisOutage(new ReplyError('LOADING Redis is loading the dataset in memory')));
  assert.ok(
    isRedisOutage(
      new ReplyError('MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no'),
    ),
  );
  assert.ok(
    isRedisOutage(
      Object.assign(new Error('Reached the max retries per request limit'), {
        name: 'MaxRetriesPerRequestError',
      }),
    ),
  );
});

test('Redis: a replica, a full memory, moving slots and a Cluster or Sentinel without nodes are outages', () => {
  for (const reply of [
    "READONLY You can't write against a read only replica.",
    "OOM command not allowed when used memory > 'maxmemory'.",
    'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
    'MOVED 3999 127.0.0.1:6381',
    'ASK 3999 127.0.0.1:6381',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'CLUSTERDOWN The cluster is down',
  ]) {
    assert.ok(isRedisOutage(new ReplyError(reply)), reply);
  }
  for (const message of [
    'Too many Cluster redirections. Last error: MOVED',
    'All sentinels are unreachable.',
  ]) {
    assert.ok(isRedisOutage(new Error(message)), message);
  }
  assert.ok(
    isRedisOutage(
      Object.assign(new Error('Failed to refresh slots cache.'), { name: 'ClusterAllFailedError' }),
    ),
  );
  assert.ok(isRedisOutage(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })));
});

test('Redis: an error reply about the command itself is not an outage', () => {
  assert.ok(
    !isRedisOutage(new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value')),
  );
  assert.ok(!isRedisOutage(new ReplyError('BUSYKEY Target key name already exists.')));
  assert.ok(!isRedisOutage(new ReplyError('NOSCRIPT No matching script. Please use EVAL.')));
  assert.ok(!isRedisOutage('ECONNREFUSED'));
});
