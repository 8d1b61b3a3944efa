/**
 * Connecting to Redis, and telling its outages apart from other errors.
 *
 * Effective defaults; only host, port, password and db come from REDIS_URL:
 *   one multiplexed connection (ioredis does not pool)
 *   connectTimeout                2000
 *   commandTimeout                2000   a command without a reply by then fails (503)
 *   enableOfflineQueue            false  while disconnected a call fails at once instead of queueing
 *   maxRetriesPerRequest          0      calls in flight when the connection drops fail at once
 *   autoResendUnfulfilledCommands false  never replay a `consume` whose reply was lost
 *   reconnect                     forever, backoff 100 ms doubling to at most 2000 ms
 * Startup waits for the first connection until the deadline; reconnecting goes on after it.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { hostOf, messageWithoutPassword } from '../../logging/redact-url.ts';
import { backoff, type Connection, type ConnectOptions } from '../connection.ts';

const REDIS_OPTIONS = {
  lazyConnect: true,
  connectTimeout: 2000,
  commandTimeout: 2000,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // A consume whose reply was lost may have run: replaying it would report `reused`
  // for a legitimate client and revoke its family. Failing with 503 is the honest answer.
  autoResendUnfulfilledCommands: false,
  // Never give up: when Redis comes back the service recovers without a restart.
  retryStrategy: (times) => backoff(times, 100),
} satisfies RedisOptions;

/** Connects; rejects, naming the host and the last error, when the deadline passes first. */
export async function connectRedis(
  url: string,
  { deadline, log }: ConnectOptions,
): Promise<Connection<Redis>> {
  const host = hostOf(url);
  const redis = new Redis(url, REDIS_OPTIONS);
  // ioredis emits an error per failed attempt; log the first of each outage only.
  let down = false;
  let lastError = 'no connection yet';
  redis.on('error', (error: Error) => {
    lastError = messageWithoutPassword(error, url);
    if (!down) log(`Redis at ${host} unreachable (${lastError}); reconnecting`);
    down = true;
  });
  redis.on('ready', () => {
    if (down) log(`Redis at ${host} reachable again`);
    down = false;
  });
  if (!(await readyBy(redis, deadline))) {
    redis.disconnect();
    throw new Error(`Redis at ${host} is unreachable: ${lastError}`);
  }
  log(`Redis at ${host} connected`);
  return {
    client: redis,
    async close() {
      // quit() says goodbye politely; when the server is gone there is no one to say it to.
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/**
 * connect() rejects on the first failed attempt while retryStrategy carries on in the
 * background, so this waits for `ready` (or the deadline) rather than for connect().
 */
function readyBy(redis: Redis, deadline: number): Promise<boolean> {
  redis.connect().catch(() => {});
  return new Promise<boolean>((resolve) => {
    if (redis.status === 'ready') return resolve(true);
    const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Socket errors: the server cannot be reached from here right now. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** Server replies, by their first word, that mean "not now": loading, failing over, busy. */
const UNAVAILABLE_REPLIES = new Set(['LOADING', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN', 'BUSY']);
/** ioredis's words for a connection it lost or a reply that never came. */
const LOST_CONNECTION_MESSAGES = ['Connection is closed', "Stream isn't writeable", 'Command timed out'];

/** Whether the error means Redis cannot be reached right now (503), not that the call was wrong. */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  const [firstWord = '', rest] = error.message.split(' ', 2);
  if (rest !== undefined && UNAVAILABLE_REPLIES.has(firstWord)) return true;
  return LOST_CONNECTION_MESSAGES.some((words) => error.message.includes(words));
}
