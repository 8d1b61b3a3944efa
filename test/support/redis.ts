/**
 * The real Redis setups a contract suite runs against, each when its URL is set (.ci/run sets
 * all three): one server, a Sentinel setup and a Redis Cluster. Clients are made the way the
 * service makes them, so the suites see what the service sees.
 */
import { Cluster } from 'ioredis';
import type { Connection } from '../../src/stores/connection.ts';
import { connectRedis, type RedisClient } from '../../src/stores/redis/connect.ts';

export interface RedisTarget {
  label: string;
  url: string | undefined;
}

export function redisTargets(): RedisTarget[] {
  return [
    { label: 'one server', url: process.env.REDIS_URL },
    { label: 'Sentinel', url: process.env.REDIS_SENTINEL_URL },
    { label: 'Cluster', url: process.env.REDIS_CLUSTER_URL },
  ];
}

export function connectTestRedis(url: string): Promise<Connection<RedisClient>> {
  return connectRedis(url, { deadline: Date.now() + 15_000, log: () => {} });
}

/** Every key matching `pattern`, from every master of a Cluster. */
export async function keysOf(redis: RedisClient, pattern: string): Promise<string[]> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  return (await Promise.all(servers.map((server) => server.keys(pattern)))).flat();
}

/** Deletes the keys one by one: in a Cluster they live in different slots. */
export async function deleteKeys(redis: RedisClient, pattern: string): Promise<void> {
  for (const key of await keysOf(redis, pattern)) await redis.del(key);
}
