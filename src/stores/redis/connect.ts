/**
 * Connecting to Redis (one server, Sentinel or Cluster, as REDIS_URL says: redis/url.ts), and
 * telling its outages apart from other errors.
 *
 * Effective defaults, the same for every shape; REDIS_URL gives only where and who:
 *   one multiplexed connection per server (ioredis does not pool), and one more per primary
 *     for the refresh-token writes that replicas must confirm (REDIS_MIN_REPLICA_ACKS, redis/writes.ts)
 *   connectTimeout                2000
 *   commandTimeout                2000   a command without a reply by then fails (503); on the
 *                                        connection of acknowledged writes, longer when two of
 *                                        their WAITs need it (ackedWritesCommandTimeout)
 *   enableOfflineQueue            false  while disconnected a call fails at once instead of queueing
 *   maxRetriesPerRequest          0      calls in flight when the connection drops fail at once
 *   autoResendUnfulfilledCommands false  never replay a `consume` whose reply was lost
 *   reconnect                     forever, backoff 100 ms doubling to at most 2000 ms
 *   failoverDetector (Sentinel)   true   follow `+switch-master` at once
 * Startup waits for the first connection until the deadline; reconnecting goes on after it.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { hostOf, messageWithoutPassword } from '../../logging/redact-url.ts';
import { backoff, type Connection, type ConnectOptions, isNetworkError } from '../connection.ts';
import { parseRedisUrl, type RedisTarget } from './url.ts';

/** The client the stores talk to: the commands they use work alike on one server and a Cluster. */
export type RedisClient = Redis | Cluster;

const REDIS_OPTIONS = {
  lazyConnect: true,
  connectTimeout: 2000,
  commandTimeout: 2000,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // A write whose reply was lost may have run: the answer is 503, and the client's retry
  // finds what it did (a rotation, within the retry window). Replayed behind the client's
  // back, a rotation would find its own and answer nobody.
  autoResendUnfulfilledCommands: false,
  // Never give up: when Redis comes back the service recovers without a restart.
  retryStrategy: (times) => backoff(times, 100),
  // A replica answering writes is a stale endpoint after a failover: reconnect (to the master
  // Sentinel names now), and never resend the refused command.
  reconnectOnError: (error) => error.message.startsWith('READONLY') && 1,
} satisfies RedisOptions;

/**
 * A write acknowledged by replicas may wait behind another batch's WAIT before its own
 * (redis/writes.ts), and Redis ends a WAIT up to one server tick (100 ms at its default `hz`)
 * after its timeout: the connection that carries them gives both WAITs that, and the writes.
 */
export function ackedWritesCommandTimeout(ackTimeoutMs: number): number {
  return Math.max(REDIS_OPTIONS.commandTimeout, 2 * (ackTimeoutMs + 100) + 300);
}

function createClient(target: RedisTarget, commandTimeout: number): RedisClient {
  const credentials = { username: target.username, password: target.password };
  switch (target.shape) {
    case 'server':
      return new Redis({
        ...REDIS_OPTIONS,
        commandTimeout,
        ...credentials,
        host: target.node.host,
        port: target.node.port,
        db: target.db,
        ...(target.tls ? { tls: {} } : {}),
      });
    case 'sentinel':
      return new Redis({
        ...REDIS_OPTIONS,
        commandTimeout,
        ...credentials,
        // One password for the set: the Sentinels require it as the data nodes do
        // (docker-compose.ha.yml), or take it with a warning when they require none.
        sentinelUsername: target.username,
        sentinelPassword: target.password,
        sentinels: target.sentinels,
        name: target.masterName,
        db: target.db,
        sentinelRetryStrategy: (times) => backoff(times, 100),
        // Reconnect to the new master as soon as a Sentinel announces a failover, rather than
        // once the old master refuses a write: until the Sentinels demote it (seconds later),
        // it takes writes that its replicas will never see.
        failoverDetector: true,
      });
    case 'cluster':
      return new Cluster(target.nodes, {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: (times) => backoff(times, 100),
        redisOptions: { ...REDIS_OPTIONS, commandTimeout, ...credentials, lazyConnect: false },
      });
  }
}

/** Connects; rejects, naming the host and the last error, when the deadline passes first. */
export async function connectRedis(
  url: string,
  { deadline, log }: ConnectOptions,
  { commandTimeout = REDIS_OPTIONS.commandTimeout }: { commandTimeout?: number } = {},
): Promise<Connection<RedisClient>> {
  const host = hostOf(url);
  const redis = createClient(parseRedisUrl(url), commandTimeout);
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
      // disconnect() then also ends what the client holds beside its connection (the
      // Sentinel subscriptions of the failover detector), which would keep the process alive.
      await redis.quit().catch(() => undefined);
      redis.disconnect();
    },
  };
}

/**
 * connect() rejects on the first failed attempt while retryStrategy carries on in the
 * background, so this waits for `ready` (or the deadline) rather than for connect().
 */
function readyBy(redis: RedisClient, deadline: number): Promise<boolean> {
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

/**
 * Server replies, by their first word, that mean "not now": loading, failing over, busy, a
 * replica answering a write (a stale endpoint after a failover), out of memory under
 * `noeviction`, a disk that refuses writes, slots moving between Cluster nodes.
 */
const UNAVAILABLE_REPLIES = new Set([
  'LOADING',
  'MASTERDOWN',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'BUSY',
  'READONLY',
  'OOM',
  'MISCONF',
  'NOREPLICAS',
  'MOVED',
  'ASK',
]);
/** ioredis's words for a connection it lost, a reply that never came, or no node to ask. */
const LOST_CONNECTION_MESSAGES = [
  'Connection is closed',
  "Stream isn't writeable",
  'Command timed out',
  'Too many Cluster redirections',
  'Failed to refresh slots cache',
  'None of startup nodes is available',
  "Cluster isn't ready",
  'All sentinels are unreachable',
];

/** Whether the error means Redis cannot be reached right now (503), not that the call was wrong. */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError') return true;
  if (isNetworkError(error)) return true;
  const [firstWord = '', rest] = error.message.split(' ', 2);
  if (rest !== undefined && UNAVAILABLE_REPLIES.has(firstWord)) return true;
  return LOST_CONNECTION_MESSAGES.some((words) => error.message.includes(words));
}
