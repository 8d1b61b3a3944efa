/**
 * Picks the storage backends by URL: MongoDB for accounts, clients, scopes and one-time tokens
 * when MONGODB_URL is set, Redis for refresh tokens and authorization codes when REDIS_URL is set, memory for each one
 * that is not. How to connect, with which defaults, lives beside each driver (mongo/connect.ts,
 * redis/connect.ts); guard.ts turns their outages into 503 while the drivers reconnect.
 */

import type { Redis } from 'ioredis';
import type { MongoClient } from 'mongodb';
import type { Connection } from './connection.ts';
import { guard, guardEach } from './guard.ts';
import { MemoryAuthorizationStore } from './memory/authorizations.ts';
import { MemoryRefreshTokenStore, memoryCatalogStores } from './memory/index.ts';
import { connectMongo, isMongoOutage } from './mongo/connect.ts';
import { mongoCatalogStores } from './mongo/index.ts';
import { RedisAuthorizationStore } from './redis/authorizations.ts';
import { connectRedis, isRedisOutage } from './redis/connect.ts';
import { RedisRefreshTokenStore } from './redis/refresh-tokens.ts';
import type { Stores } from './types.ts';

export interface OpenStoresOptions {
  mongodbUrl?: string;
  redisUrl?: string;
  /** How long to keep trying to reach each backend at startup; then openStores rejects. */
  startupTimeoutMs?: number;
  log?: (msg: string) => void;
}

export async function openStores(options: OpenStoresOptions): Promise<Stores> {
  const connect = {
    deadline: Date.now() + (options.startupTimeoutMs ?? 30000),
    log: options.log ?? (() => {}),
  };
  // Both at once so a slow backend does not eat the other's startup time.
  const [mongo, redis] = await bothOrNeither(
    options.mongodbUrl ? connectMongo(options.mongodbUrl, connect) : undefined,
    options.redisUrl ? connectRedis(options.redisUrl, connect) : undefined,
  );
  return {
    ...(mongo
      ? guardEach(mongoCatalogStores(mongo.client.db()), 'MongoDB', isMongoOutage)
      : memoryCatalogStores()),
    refreshTokens: redis
      ? guard(new RedisRefreshTokenStore(redis.client), 'Redis', isRedisOutage)
      : new MemoryRefreshTokenStore(),
    authorizations: redis
      ? guard(new RedisAuthorizationStore(redis.client), 'Redis', isRedisOutage)
      : new MemoryAuthorizationStore(),
    async close() {
      await Promise.allSettled([mongo?.close(), redis?.close()]);
    },
  };
}

/** Both connections, or none: when one fails, the other is closed and the first failure thrown. */
async function bothOrNeither(
  mongo: Promise<Connection<MongoClient>> | undefined,
  redis: Promise<Connection<Redis>> | undefined,
): Promise<[Connection<MongoClient> | undefined, Connection<Redis> | undefined]> {
  const [first, second] = await Promise.allSettled([mongo, redis]);
  if (first.status === 'fulfilled' && second.status === 'fulfilled') return [first.value, second.value];
  await Promise.allSettled([
    first.status === 'fulfilled' ? first.value?.close() : undefined,
    second.status === 'fulfilled' ? second.value?.close() : undefined,
  ]);
  throw first.status === 'rejected' ? first.reason : (second as PromiseRejectedResult).reason;
}
