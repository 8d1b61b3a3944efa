/**
 * How much Redis memory refresh-token sessions hold: `used_memory` (INFO memory) of a Redis
 * that only this measurement uses, before the logins, after every session has been refreshed
 * `REFRESHES` times, and after `FURTHER_REFRESHES` more each. A store that keeps every rotated
 * token grows with each refresh; one that keeps a session's live state only does not.
 */
import { Redis } from 'ioredis';
import { startRedis, uniqueName, withDatabase } from '../test/support/backends.ts';
import { log, ours, passwordLoad, refreshLoad } from './load.ts';
import { startService, stopLater } from './servers.ts';

const SESSIONS = 1_000;
export const REFRESHES = 20;
export const FURTHER_REFRESHES = 10;
/** Divides every request count below, so autocannon sends exactly that many. */
const CONNECTIONS = 20;
/** Logins only create the sessions here; their bcrypt cost is measured elsewhere. */
const LOGIN_BCRYPT_COST = '4';

export interface SessionMemory {
  sessions: number;
  /** Bytes of `used_memory` per session after REFRESHES refreshes of each. */
  perSession: number;
  /** Bytes per session that FURTHER_REFRESHES more refreshes of each added. */
  growthPerSession: number;
  /** Requests that did not answer 200. */
  failures: number;
}

async function usedMemory(redis: Redis): Promise<number> {
  const match = /^used_memory:(\d+)/m.exec(await redis.info('memory'));
  if (!match?.[1]) throw new Error('INFO memory has no used_memory');
  return Number(match[1]);
}

/** Password grants for `count` sessions of the seeded user; their refresh tokens. */
async function logIn(url: string, count: number): Promise<{ tokens: string[]; failures: number }> {
  const tokens: string[] = [];
  const result = await passwordLoad(ours(url), {
    connections: CONNECTIONS,
    amount: count,
    onToken: (token) => tokens.push(token),
  });
  return { tokens, failures: result.failures };
}

/** Runs on a Redis of its own, next to the FerretDB at `mongoUrl` (a database of its own). */
export async function measureSessionMemory(mongoUrl: string): Promise<SessionMemory> {
  const backend = await startRedis();
  stopLater(() => backend.dispose());
  const service = await startService({
    MONGODB_URL: withDatabase(mongoUrl, uniqueName('bench_sessions')),
    REDIS_URL: backend.url,
    WORKERS: '2',
    BCRYPT_COST: LOGIN_BCRYPT_COST,
  });
  const redis = new Redis(backend.url);
  stopLater(async () => void redis.disconnect());

  const before = await usedMemory(redis);
  log(`Redis memory: ${SESSIONS} logins`);
  const login = await logIn(service.url, SESSIONS);
  const pool = login.tokens;
  const sessions = pool.length;
  log(`Redis memory: ${REFRESHES} refreshes of each session`);
  const first = await refreshLoad(ours(service.url), pool, {
    amount: sessions * REFRESHES,
    connections: CONNECTIONS,
  });
  const after = await usedMemory(redis);
  log(`Redis memory: ${FURTHER_REFRESHES} further refreshes of each session`);
  const further = await refreshLoad(ours(service.url), pool, {
    amount: sessions * FURTHER_REFRESHES,
    connections: CONNECTIONS,
  });
  const afterFurther = await usedMemory(redis);
  await service.stop();
  return {
    sessions,
    perSession: (after - before) / sessions,
    growthPerSession: (afterFurther - after) / sessions,
    failures: login.failures + first.failures + further.failures,
  };
}
