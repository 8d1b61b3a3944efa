/**
 * Connecting to MongoDB (or FerretDB), and telling its outages apart from other errors.
 *
 * Effective defaults; the same option in the MONGODB_URL query wins, e.g.
 * `mongodb://host/db?maxPoolSize=50&serverSelectionTimeoutMS=5000`:
 *   maxPoolSize               20      connections per process
 *   serverSelectionTimeoutMS  2000    how long a call waits for a reachable server before 503
 *   waitQueueTimeoutMS        2000    how long a call waits for a connection from the pool
 *                                     (all 20 busy, or a new one opening) before 503
 *   connectTimeoutMS          2000    TCP + handshake of one connection
 *   socketTimeoutMS           10000   a reply that takes longer fails the call (503)
 *   maxAdaptiveRetries        0       an overloaded server's refusal is a 503 at once, not
 *                                     retried after pauses of up to 10 s
 *   w                         majority  writes survive a replica-set failover
 *   readConcernLevel          majority  reads never rest on a write a failover rolls back
 * Startup: connecting and ensuring the indexes is retried (backoff 250 ms doubling to 2000 ms)
 * until the deadline. Afterwards the driver reconnects by itself in the background.
 */
import {
  MongoClient,
  type MongoClientOptions,
  MongoError,
  MongoNetworkError,
  MongoServerError,
} from 'mongodb';
import { hostOf, messageWithoutPassword } from '../../logging/redact-url.ts';
import {
  backoff,
  type Connection,
  type ConnectOptions,
  isNetworkError,
  TimeoutError,
  withTimeout,
} from '../connection.ts';
import { ensureIndexes } from './index.ts';

const MONGO_DEFAULTS = {
  maxPoolSize: 20,
  serverSelectionTimeoutMS: 2000,
  connectTimeoutMS: 2000,
  socketTimeoutMS: 10000,
  // The driver's default, 0, lets a call wait for a pooled connection without end: a write
  // the rule lock let begin could then start long after its lease ran out (rule-lock.ts).
  waitQueueTimeoutMS: 2000,
  // Each retry of an overloaded server comes after a pause of up to 10 s, and every one
  // lengthens the longest write the rule lock must wait out; the client retries a 503 instead.
  maxAdaptiveRetries: 0,
  // An account write acknowledged is on a majority of a replica set: a failover cannot roll
  // back a password change or a deactivation that the service already reported done.
  w: 'majority',
  // Reads see only majority-committed data, so no answer rests on a write a failover undoes.
  readConcernLevel: 'majority',
} satisfies MongoClientOptions;

/** The driver's longest pause before retrying an overloaded server (MAX_BACKOFF_MS in mongodb 7). */
const OVERLOAD_BACKOFF_MS = 10_000;

/**
 * The longest one write can take before the driver fails it, the URL's options over the
 * defaults. One attempt: finding a server, getting a connection from the pool (waiting for a
 * free one, or for a new one to open: connecting happens within that wait), waiting for the
 * reply. A retryable write (a replica set, `retryWrites` on, as by default) is attempted
 * twice, or once more per `maxAdaptiveRetries` with a pause before each. A client-side
 * operation timeout (`timeoutMS`) bounds all of it instead. Infinity when the URL turns one of
 * these timeouts off (0) or gives no number.
 */
export function longestMongoOperationMs(url: string): number {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  const inUrl = new Map([...new URLSearchParams(query)].map(([key, value]) => [key.toLowerCase(), value]));
  const milliseconds = (given: string | undefined, byDefault: number) => {
    const ms = given === undefined ? byDefault : Number(given);
    return Number.isFinite(ms) && ms > 0 ? ms : Number.POSITIVE_INFINITY;
  };
  const timeout = (name: 'serverSelectionTimeoutMS' | 'waitQueueTimeoutMS' | 'socketTimeoutMS') =>
    milliseconds(inUrl.get(name.toLowerCase()), MONGO_DEFAULTS[name]);
  const overall = inUrl.get('timeoutms');
  if (overall !== undefined) return milliseconds(overall, 0);
  const attemptMs =
    timeout('serverSelectionTimeoutMS') + timeout('waitQueueTimeoutMS') + timeout('socketTimeoutMS');
  const retriesGiven = inUrl.get('maxadaptiveretries');
  const overloadRetries =
    retriesGiven === undefined ? MONGO_DEFAULTS.maxAdaptiveRetries : Number(retriesGiven);
  if (!Number.isInteger(overloadRetries) || overloadRetries < 0) return Number.POSITIVE_INFINITY;
  if (inUrl.get('retrywrites')?.toLowerCase() === 'false') return attemptMs;
  const attempts = Math.max(2, overloadRetries + 1);
  return attempts * attemptMs + overloadRetries * OVERLOAD_BACKOFF_MS;
}

/** Connects and ensures the indexes every store relies on; rejects when the deadline passes first. */
export async function connectMongo(
  url: string,
  { deadline, log }: ConnectOptions,
): Promise<Connection<MongoClient>> {
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
      return { client, close: () => client.close() };
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

/**
 * Throws an Error saying why the driver refuses the connection string. The driver parses (and
 * refuses) it when a client is made, before any connection. The message never holds the URL,
 * which may carry a password.
 */
export function checkMongoUrl(url: string): void {
  try {
    new MongoClient(url);
  } catch (error) {
    throw new Error(
      String((error as Error).message)
        .split(url)
        .join('<the URL>'),
    );
  }
}

/** Server codes that mean "not reachable right now" rather than "your request is wrong". */
const TRANSIENT_CODES = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
/**
 * Driver errors of a connection, a pool or server selection, by name: the name each reports,
 * which for the pool's errors is not its class's (`WaitQueueTimeoutError` reports
 * `MongoWaitQueueTimeoutError`).
 */
const OUTAGE_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoClientClosedError',
  'MongoOperationTimeoutError',
  'MongoPoolClearedError',
  'PoolClearedOnNetworkError',
  'MongoPoolClosedError',
  'MongoWaitQueueTimeoutError',
]);
const OUTAGE_LABELS = ['ResetPool', 'SystemOverloadedError'];

/** Whether the error means MongoDB cannot be reached right now (503), not that the call was wrong. */
export function isMongoOutage(error: unknown): boolean {
  // The driver lets some socket errors through as they are (EPIPE on a write to a dead socket).
  if (error instanceof Error && !(error instanceof MongoError)) return isNetworkError(error);
  if (!(error instanceof MongoError)) return false;
  // By name as well as class: the pool errors are not exported by the driver.
  if (OUTAGE_NAMES.has(error.name) || error instanceof MongoNetworkError) return true;
  if (OUTAGE_LABELS.some((label) => error.hasErrorLabel(label))) return true;
  return error instanceof MongoServerError && TRANSIENT_CODES.has(Number(error.code));
}

/** Logs the start and end of each outage once, from the driver's background heartbeats. */
function watchMongo(client: MongoClient, url: string, log: (message: string) => void): void {
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

/** Our defaults for the options the URL does not set itself: an option object would win over the URL. */
function defaultsNotInUrl<T extends object>(url: string, defaults: T): Partial<T> {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  const inUrl = new Set([...new URLSearchParams(query).keys()].map((key) => key.toLowerCase()));
  return Object.fromEntries(
    Object.entries(defaults).filter(([key]) => !inUrl.has(key.toLowerCase())),
  ) as Partial<T>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
