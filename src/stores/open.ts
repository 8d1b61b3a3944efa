/**
 * Picks the storage backends by URL: MongoDB for accounts, clients, scopes and one-time tokens
 * when MONGODB_URL is set, Redis for refresh tokens and authorization codes when REDIS_URL is set, memory for each one
 * that is not. How to connect, with which defaults, lives beside each driver (mongo/connect.ts,
 * redis/connect.ts); guard.ts turns their outages into 503 while the drivers reconnect, at once
 * while backend-health.ts knows a backend is down.
 */

import type { MongoClient } from 'mongodb';
import { watchBackend } from './backend-health.ts';
import { keepAnnouncing } from './cache/announcements.ts';
import { cacheCatalog } from './cache/cached-stores.ts';
import { RedisInvalidations } from './cache/invalidation.ts';
import type { Connection } from './connection.ts';
import { guard, guardEach } from './guard.ts';
import { MemoryCodeFlowStore } from './memory/code-flow.ts';
import { MemoryRefreshTokenStore, memoryCatalogStores } from './memory/index.ts';
import { connectMongo, isMongoOutage } from './mongo/connect.ts';
import { mongoCatalogStores } from './mongo/index.ts';
import { RedisCodeFlowStore } from './redis/code-flow.ts';
import type { RedisClient } from './redis/connect.ts';
import { ackedWritesCommandTimeout, connectRedis, isRedisOutage } from './redis/connect.ts';
import { RedisRefreshTokenStore } from './redis/refresh-tokens.ts';
import { acknowledgedWrites } from './redis/writes.ts';
import type { Stores } from './stores.ts';

export interface OpenStoresOptions {
  mongodbUrl?: string;
  redisUrl?: string;
  /** How long to keep trying to reach each backend at startup; then openStores rejects. */
  startupTimeoutMs: number;
  log?: (msg: string) => void;
  /** Accounts each process keeps in memory when both backends are set; see cache/. */
  accountCacheSize: number;
  /** Replicas that confirm each refresh-token change before it counts (Redis WAIT), and how fast. */
  redisReplicaAcks: { replicas: number; timeoutMs: number };
}

export async function openStores(options: OpenStoresOptions): Promise<Stores> {
  const connect = {
    deadline: Date.now() + options.startupTimeoutMs,
    log: options.log ?? (() => {}),
  };
  // Both at once so a slow backend does not eat the other's startup time.
  const [mongo, redis] = await bothOrNeither(
    options.mongodbUrl ? connectMongo(options.mongodbUrl, connect) : undefined,
    options.redisUrl ? connectRedis(options.redisUrl, connect) : undefined,
  );
  const acks = options.redisReplicaAcks;
  // The acknowledged writes wait on a connection of their own: see redis/writes.ts.
  const writer =
    redis && options.redisUrl && acks.replicas > 0
      ? await connectRedis(
          options.redisUrl,
          {
            ...connect,
            log: (message) => connect.log(`${message} (writes acknowledged by ${acks.replicas} replicas)`),
          },
          { commandTimeout: ackedWritesCommandTimeout(acks.timeoutMs) },
        ).catch(async (error: unknown) => {
          await Promise.allSettled([mongo?.close(), redis.close()]);
          throw error;
        })
      : undefined;
  const mongoHealth =
    mongo &&
    watchBackend({
      name: 'MongoDB',
      isOutage: isMongoOutage,
      ping: () => mongo.client.db().command({ ping: 1 }),
    });
  const redisHealth =
    redis && watchBackend({ name: 'Redis', isOutage: isRedisOutage, ping: () => redis.client.ping() });
  const catalog = mongoHealth
    ? guardEach(mongoCatalogStores(mongo.client.db()), mongoHealth)
    : memoryCatalogStores();
  // Embedded, the memory stores are the cache; with Redis, every process keeps its own.
  const invalidations =
    mongo && redis
      ? new RedisInvalidations(redis.client, undefined, (error) =>
          connect.log(
            `cache invalidation not published yet, sent again until Redis takes it: ${error.message}`,
          ),
        )
      : undefined;
  // Whoever writes without the channel must be able to learn that it has listeners.
  const announcements = invalidations && (await keepAnnouncing(catalog.cachingNodes, connect.log));
  const redisRefreshTokens =
    redis &&
    new RedisRefreshTokenStore(redis.client, {
      writes: writer && acknowledgedWrites(writer.client, acks.replicas, acks.timeoutMs, connect.log),
    });
  return {
    ...(invalidations ? cacheCatalog(catalog, invalidations, options.accountCacheSize) : catalog),
    refreshTokens:
      redisRefreshTokens && redisHealth
        ? guard(redisRefreshTokens, redisHealth)
        : new MemoryRefreshTokenStore(),
    codeFlow: redisHealth
      ? guard(new RedisCodeFlowStore(redis.client), redisHealth)
      : new MemoryCodeFlowStore(),
    async close() {
      announcements?.stop();
      mongoHealth?.stop();
      redisHealth?.stop();
      await invalidations?.close();
      // The writes that start the retry windows of answers just given, still out.
      await redisRefreshTokens?.drain();
      await Promise.allSettled([mongo?.close(), redis?.close(), writer?.close()]);
    },
  };
}

/** Both connections, or none: when one fails, the other is closed and the first failure thrown. */
async function bothOrNeither(
  mongo: Promise<Connection<MongoClient>> | undefined,
  redis: Promise<Connection<RedisClient>> | undefined,
): Promise<[Connection<MongoClient> | undefined, Connection<RedisClient> | undefined]> {
  const [first, second] = await Promise.allSettled([mongo, redis]);
  if (first.status === 'fulfilled' && second.status === 'fulfilled') return [first.value, second.value];
  await Promise.allSettled([
    first.status === 'fulfilled' ? first.value?.close() : undefined,
    second.status === 'fulfilled' ? second.value?.close() : undefined,
  ]);
  throw first.status === 'rejected' ? first.reason : (second as PromiseRejectedResult).reason;
}
