/**
 * How much Redis memory refresh-token sessions hold: `used_memory` (INFO memory) of a Redis
 * that only this measurement uses, before the logins (once a few sessions have warmed it up),
 * after every session has been refreshed
 * `REFRESHES` times (within the retry window of the last rotation, when each session also
 * has its retry record, and once that window has passed), and after `FURTHER_REFRESHES` more
 * each. A store that keeps every rotated token grows with each refresh; one that keeps a
 * session's live state only does not.
 */
import { Redis } from 'ioredis';
import { startRedis, uniqueName, withDatabase } from '../test/support/backends.ts';
import { log, ours, passwordLoad, refreshLoad } from './load.ts';
import { startService, stopLater } from './servers.ts';

const SESSIONS = 1_000;
/**
 * Sessions that run through every step before the baseline is taken. Redis allocates some
 * memory once per server, not per key: a latency histogram for each command the first time
 * it runs (Redis 7's `latency-tracking`, about 20 KB each, some 350 KB for the commands a
 * session uses), the script cache, the clients' buffers. Counted after the baseline, that
 * fixed cost came to about 330 B of every one of the 1,000 sessions.
 */
const WARM_UP_SESSIONS = 20;
export const REFRESHES = 20;
export const FURTHER_REFRESHES = 10;
/** Divides every request count below, so autocannon sends exactly that many. */
const CONNECTIONS = 20;
/** Logins only create the sessions here; their bcrypt cost is measured elsewhere. */
const LOGIN_BCRYPT_COST = '4';
/** A short retry window, so that the measurement after it does not wait long. */
const RETRY_SECONDS = 2;

export interface SessionMemory {
  sessions: number;
  /** Bytes of `used_memory` per session after REFRESHES refreshes of each, within the retry window. */
  perSessionInWindow: number;
  /** The same once the window has passed. */
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
    REFRESH_TOKEN_RETRY_SECONDS: String(RETRY_SECONDS),
  });
  const redis = new Redis(backend.url);
  stopLater(async () => void redis.disconnect());

  log(`Redis memory: ${WARM_UP_SESSIONS} sessions to warm Redis up`);
  const warmUp = await logIn(service.url, WARM_UP_SESSIONS);
  const warmUpKeys = await redis.dbsize();
  const warmUpRefreshes = await refreshLoad(ours(service.url), [...warmUp.tokens], {
    amount: WARM_UP_SESSIONS * 2,
    connections: CONNECTIONS,
  });
  await retryWindowPassed(redis, warmUpKeys);
  const before = await usedMemory(redis);
  log(`Redis memory: ${SESSIONS} logins`);
  const login = await logIn(service.url, SESSIONS);
  const pool = login.tokens;
  const sessions = pool.length;
  const keys = await redis.dbsize();
  log(`Redis memory: ${REFRESHES} refreshes of each session`);
  const first = await refreshLoad(ours(service.url), pool, {
    amount: sessions * REFRESHES,
    connections: CONNECTIONS,
  });
  const inWindow = await usedMemory(redis);
  await retryWindowPassed(redis, keys);
  const after = await usedMemory(redis);
  log(`Redis memory: ${FURTHER_REFRESHES} further refreshes of each session`);
  const further = await refreshLoad(ours(service.url), pool, {
    amount: sessions * FURTHER_REFRESHES,
    connections: CONNECTIONS,
  });
  await retryWindowPassed(redis, keys);
  const afterFurther = await usedMemory(redis);
  await service.stop();
  return {
    sessions,
    perSessionInWindow: (inWindow - before) / sessions,
    perSession: (after - before) / sessions,
    growthPerSession: (afterFurther - after) / sessions,
    failures: warmUp.failures + warmUpRefreshes.failures + login.failures + first.failures + further.failures,
  };
}

/** Waits out the retry window, until Redis has dropped the retry records: as many keys as after the logins. */
async function retryWindowPassed(redis: Redis, keys: number): Promise<void> {
  log('Redis memory: waiting for the retry window to pass');
  await new Promise((resolve) => setTimeout(resolve, RETRY_SECONDS * 1000));
  const deadline = Date.now() + 30_000;
  while ((await redis.dbsize()) > keys && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
}
