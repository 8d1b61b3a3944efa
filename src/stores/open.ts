/**
 * Chooses and connects the storage backends.
 *
 * Effective defaults (README may quote this block):
 *
 *   MongoDB (MONGODB_URL; any of these can be overridden by the same option in the URL query,
 *   e.g. `mongodb://host/db?maxPoolSize=50&serverSelectionTimeoutMS=5000`):
 *     maxPoolSize               20      connections per process
 *     serverSelectionTimeoutMS  2000    how long a call waits for a reachable server before 503
 *     connectTimeoutMS          2000    TCP + handshake of one connection
 *     socketTimeoutMS           10000   a reply that takes longer fails the call (503)
 *   Redis (REDIS_URL; options are fixed, only host, port, password and db come from the URL):
 *     one multiplexed connection (ioredis does not pool)
 *     connectTimeout            2000
 *     commandTimeout            2000    a command without a reply by then fails (503)
 *     enableOfflineQueue        false   while disconnected a call fails at once instead of queueing
 *     maxRetriesPerRequest      0       calls in flight when the connection drops fail at once
 *     autoResendUnfulfilledCommands false  never replay a `consume` whose reply was lost
 *     reconnect                 forever, backoff 100 ms doubling to at most 2000 ms
 *   Startup: each backend is retried (backoff 250 ms doubling to 2000 ms) until
 *   startupTimeoutMs (default 30000), then openStores rejects naming the backend and host.
 *
 * While running, connection-type failures of either driver become BackendUnavailable (503);
 * the drivers keep reconnecting in the background, so the service recovers by itself.
 */
import { Redis } from 'ioredis';
import { MongoClient, type MongoClientOptions, MongoError, MongoServerError } from 'mongodb';
import { BackendUnavailable, Problem } from '../errors.ts';
import { hostOf, messageWithoutPassword } from '../logging/redact-url.ts';
import { MemoryRefreshTokenStore, memoryCatalogStores } from './memory/index.ts';
import { ensureIndexes, type MongoCatalogStores, mongoCatalogStores } from './mongo/index.ts';
import { RedisRefreshTokenStore } from './redis/refresh-tokens.ts';
import type { RefreshTokenStore, Stores } from './types.ts';

export interface OpenStoresOptions {
  mongodbUrl?: string;
  redisUrl?: string;
  startupTimeoutMs?: number;
  log?: (msg: string) => void;
}

const MONGO_DEFAULTS = {
  maxPoolSize: 20,
  serverSelectionTimeoutMS: 2000,
  connectTimeoutMS: 2000,
  socketTimeoutMS: 10000,
} satisfies MongoClientOptions;

export async function openStores(options: OpenStoresOptions): Promise<Stores> {
  const log = options.log ?? (() => {});
  const deadline = Date.now() + (options.startupTimeoutMs ?? 30000);
  // Both at once so a slow backend does not eat the other's startup time.
  const [catalog, tokens] = await Promise.allSettled([
    options.mongodbUrl ? openMongo(options.mongodbUrl, deadline, log) : undefined,
    options.redisUrl ? openRedis(options.redisUrl, deadline, log) : undefined,
  ]);
  if (catalog.status === 'rejected' || tokens.status === 'rejected') {
    await Promise.allSettled([
      catalog.status === 'fulfilled' ? catalog.value?.close() : undefined,
      tokens.status === 'fulfilled' ? tokens.value?.close() : undefined,
    ]);
    throw catalog.status === 'rejected' ? catalog.reason : (tokens as PromiseRejectedResult).reason;
  }
  const mongo = catalog.value;
  const redis = tokens.value;
  return {
    ...(mongo ? mongo.stores : memoryCatalogStores()),
    refreshTokens: redis ? redis.stores : new MemoryRefreshTokenStore(),
    async close() {
      await Promise.allSettled([mongo?.close(), redis?.close()]);
    },
  };
}

/** A connected backend: its (guarded) stores and how to let go of the connection. */
interface Opened<T> {
  stores: T;
  close(): Promise<void>;
}

async function openMongo(
  url: string,
  deadline: number,
  log: (msg: string) => void,
): Promise<Opened<MongoCatalogStores>> {
  const host = hostOf(url);
  const clientOptions = defaultsNotInUrl(url, MONGO_DEFAULTS);
  let lastReason = '';
  for (let attempt = 1; ; attempt++) {
    // A bad URL throws here, outside the retry: waiting would not fix it.
    const client = new MongoClient(url, clientOptions);
    try {
      await withTimeout(
        (async () => {
          await client.connect();
          await ensureIndexes(client.db(), log);
        })(),
        deadline - Date.now(),
      );
      log(`MongoDB at ${host} connected`);
      watchMongo(client, url, log);
      const stores = guardAll(mongoCatalogStores(client.db()), 'MongoDB', isMongoOutage);
      return { stores, close: () => client.close() };
    } catch (error) {
      await client.close().catch(() => {});
      // A timeout of our own says less than the driver's last complaint, so keep that one.
      const reason =
        error instanceof TimeoutError && lastReason ? lastReason : messageWithoutPassword(error, url);
      lastReason = reason;
      if (Date.now() >= deadline - 50) {
        throw new Error(`MongoDB at ${host} is unreachable: ${reason}`, { cause: error });
      }
      log(`MongoDB at ${host} not reachable yet (${reason}); retrying`);
      await sleep(Math.min(backoff(attempt, 250), deadline - Date.now()));
    }
  }
}

/** Logs the start and end of each outage once, from the driver's background heartbeats. */
function watchMongo(client: MongoClient, url: string, log: (msg: string) => void): void {
  const host = hostOf(url);
  let down = false;
  client.on('serverHeartbeatFailed', (event) => {
    if (!down)
      log(`MongoDB at ${host} unreachable (${messageWithoutPassword(event.failure, url)}); reconnecting`);
    down = true;
  });
  client.on('serverHeartbeatSucceeded', () => {
    if (down) log(`MongoDB at ${host} reachable again`);
    down = false;
  });
}

async function openRedis(
  url: string,
  deadline: number,
  log: (msg: string) => void,
): Promise<Opened<RefreshTokenStore>> {
  const host = hostOf(url);
  const redis = new Redis(url, {
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
  });
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
  // connect() rejects on the first failed attempt while retryStrategy carries on in the
  // background, so wait for `ready` (or the deadline) rather than for connect().
  redis.connect().catch(() => {});
  const ready = await new Promise<boolean>((resolve) => {
    if (redis.status === 'ready') return resolve(true);
    const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  if (!ready) {
    redis.disconnect();
    throw new Error(`Redis at ${host} is unreachable: ${lastError}`);
  }
  log(`Redis at ${host} connected`);
  return {
    stores: guard(new RedisRefreshTokenStore(redis), 'Redis', isRedisOutage),
    async close() {
      // quit() says goodbye politely; when the server is gone there is no one to say it to.
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/**
 * Wraps every method of every store so a connection-type driver error becomes
 * BackendUnavailable. Problems (DuplicateIdentity, ...) and any other error pass unchanged.
 */
function guardAll<T extends object>(stores: T, backend: string, isOutage: (error: unknown) => boolean): T {
  const result = {} as T;
  for (const key of Object.keys(stores) as (keyof T)[]) {
    result[key] = guard(stores[key] as object, backend, isOutage) as T[keyof T];
  }
  return result;
}

function guard<T extends object>(target: T, backend: string, isOutage: (error: unknown) => boolean): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        try {
          // Called on the real object: the stores keep their state in #private fields.
          return await value.apply(object, args);
        } catch (error) {
          if (error instanceof Problem || !isOutage(error)) throw error;
          throw Object.assign(new BackendUnavailable(backend), { cause: error });
        }
      };
    },
  });
}

/** Server codes that mean "not reachable right now" rather than "your request is wrong". */
const MONGO_TRANSIENT_CODES = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
const MONGO_OUTAGE_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoClientClosedError',
  'MongoOperationTimeoutError',
  'PoolClearedError',
  'PoolClosedError',
  'WaitQueueTimeoutError',
]);

export function isMongoOutage(error: unknown): boolean {
  if (!(error instanceof MongoError)) return false;
  // By name as well as class: the pool errors are not exported by the driver.
  if (MONGO_OUTAGE_NAMES.has(error.name)) return true;
  if (error.hasErrorLabel('ResetPool') || error.hasErrorLabel('SystemOverloadedError')) return true;
  return error instanceof MongoServerError && MONGO_TRANSIENT_CODES.has(Number(error.code));
}

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

export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  return /Connection is closed|Stream isn't writeable|Command timed out|^(LOADING|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|BUSY) /.test(
    error.message,
  );
}

/** Our defaults for the options the URL does not set itself: an option object would win over the URL. */
function defaultsNotInUrl(url: string, defaults: Record<string, number>): Record<string, number> {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  const inUrl = new Set([...new URLSearchParams(query).keys()].map((key) => key.toLowerCase()));
  return Object.fromEntries(Object.entries(defaults).filter(([key]) => !inUrl.has(key.toLowerCase())));
}

function backoff(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.min(attempt - 1, 10), 2000);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

class TimeoutError extends Error {}

/** Rejects when `promise` has not settled within `ms`; the caller cleans up what is left. */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimeoutError(`no answer within ${Math.max(0, ms)} ms`)),
      Math.max(0, ms),
    );
  });
  // The loser of the race must not surface later as an unhandled rejection.
  promise.catch(() => {});
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
