/**
 * The account listings over 100,000 users: a search and a sorted page of `GET /users`, on
 * memory stores and on FerretDB, as an admin console asks for them. The service runs in the
 * bench's process (1 worker), so that the users are seeded straight into its stores (memory)
 * or its database (FerretDB: the documents the store writes, in batches), with no HTTP and
 * no bcrypt. The requests go one at a time over HTTP, and each figure is the median (and the
 * 99th percentile) of one request's time: a listing's latency, which a scan of the
 * collection sets, rather than a throughput.
 */
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import type { Account, AccountStatus } from '../src/accounts/model.ts';
import { type AccountDoc, toAccountDoc } from '../src/stores/mongo/accounts.ts';
import { accountRecord } from '../test/support/accounts.ts';
import { onPath, startFerretDb, uniqueName, withDatabase } from '../test/support/backends.ts';
import { ADMIN_CLIENT, SEEDED_ADMIN } from '../test/support/http.ts';
import { send } from '../test/support/processes.ts';
import { startTestServer, type TestServer } from '../test/support/server.ts';
import { log, type Measurement } from './load.ts';
import { stopAll, stopLater } from './servers.ts';

const USERS = 100_000;
/**
 * Each figure takes SAMPLES requests, or SAMPLING_MS, whichever comes first, but at least
 * MIN_SAMPLES; and the part stops sampling (after one request each) once it has run for
 * PART_MS, so that a slow backend on a loaded machine cannot stretch the run.
 */
const SAMPLES = 30;
const SAMPLING_MS = 10_000;
const MIN_SAMPLES = 3;
const PART_MS = 4 * 60_000;

/** What a console asks for: part of a name in any case, and a page sorted by name, descending. */
const SEARCH = `/users?search=${encodeURIComponent('MÜLL')}&limit=20`;
const SORTED_PAGE = '/users?sort=-lastName&page=1&limit=20';

const FIRST_NAMES = ['Ada', 'Åsa', 'Björn', 'Chloé', 'Dmitri', 'Eva', 'Jürgen', 'Léa', 'Noah', 'Zoë'];
const LAST_NAMES = ['Berg', 'Costa', 'Dubois', 'Kowalski', 'Müller', 'Nakamura', 'Øster', 'Smith', 'Ślęzak'];
const STATUSES: AccountStatus[] = [
  'active',
  'active',
  'active',
  'active',
  'active',
  'active',
  'pending',
  'inactive',
];

/** The i-th user: varied names (some unset), statuses and creation times, no real password. */
function user(i: number): Account {
  const at = new Date(Date.UTC(2020, 0, 1) + i * 60_000);
  return accountRecord(
    {
      identity: `user${String(i).padStart(6, '0')}@example.com`,
      passwordHash: '$2b$10$not-a-real-hash-nobody-signs-in-with',
      firstName: i % 11 === 0 ? null : (FIRST_NAMES[i % FIRST_NAMES.length] ?? null),
      lastName: i % 13 === 0 ? null : (LAST_NAMES[(i * 7) % LAST_NAMES.length] ?? null),
      status: STATUSES[i % STATUSES.length],
    },
    at,
  );
}

export interface ListingRow {
  name: string;
  setup: string;
  m: Measurement;
}

/** The rows of both setups; FerretDB's only where the binary is on PATH. */
export async function measureListings(): Promise<ListingRow[]> {
  const deadline = performance.now() + PART_MS;
  const memory = await startInProcess();
  log(`listings: seeding ${USERS} users in memory`);
  for (let i = 0; i < USERS; i++) await memory.app.stores.users.create(user(i));
  const rows = await measureOn(memory, 'memory', deadline);
  await memory.close();

  if (!onPath('ferretdb')) {
    log('listings: skipping FerretDB, not on PATH');
    return rows;
  }
  const ferret = await startFerretDb();
  stopLater(() => ferret.dispose());
  const database = withDatabase(ferret.url, uniqueName('bench_listings'));
  await seedDatabase(database);
  // FerretDB reads every document for a count, a search or a sort on another field than _id
  // (it uses no index for them), which on a loaded machine can outlast the driver's 10 s
  // socket timeout; and the first start adds the listings' indexes to 100,000 documents.
  const url = new URL(database);
  url.searchParams.set('socketTimeoutMS', '120000');
  const started = performance.now();
  const real = await startInProcess({ MONGODB_URL: url.href, BACKEND_STARTUP_TIMEOUT: '600' });
  log(`listings: the service opened the database in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  rows.push(...(await measureOn(real, 'FerretDB', deadline)));
  await real.close();
  await ferret.dispose();
  return rows;
}

/** The service in this process; stopped by the run's stopAll too, if it ends early. */
async function startInProcess(env: Record<string, string> = {}): Promise<TestServer> {
  const server = await startTestServer({ env });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= server.close();
    return closing;
  };
  stopLater(close);
  return { ...server, close };
}

/** Inserts the users as the store stores them, a thousand per request. */
async function seedDatabase(url: string): Promise<void> {
  log(`listings: seeding ${USERS} users in FerretDB`);
  const client = await MongoClient.connect(url);
  try {
    const users = client.db().collection<AccountDoc>('users');
    for (let first = 0; first < USERS; first += 1000) {
      const batch = Array.from({ length: Math.min(1000, USERS - first) }, (_, i) =>
        toAccountDoc(user(first + i)),
      );
      await users.insertMany(batch, { ordered: false });
    }
  } finally {
    await client.close();
  }
}

async function measureOn(server: TestServer, backend: string, deadline: number): Promise<ListingRow[]> {
  const token = await adminToken(server.url);
  const rows: ListingRow[] = [];
  for (const [name, path] of [
    ['GET /users search (?search=MÜLL), page 1', SEARCH],
    ['GET /users sorted page (?sort=-lastName), page 1', SORTED_PAGE],
  ] as const) {
    log(`listings: ${backend}: ${path}`);
    const { m, requests } = await sequentially(`${server.url}${path}`, token, deadline);
    const setup = `1 worker, ${backend}, ${USERS.toLocaleString('en')} users; ${requests} requests, one at a time`;
    rows.push({ name, setup, m });
  }
  return rows;
}

async function adminToken(url: string): Promise<string> {
  const response = await send(`${url}/security/generate-token`, {
    method: 'POST',
    json: { grant_type: 'password', scope: 'api', ...ADMIN_CLIENT, ...SEEDED_ADMIN },
  });
  if (response.status !== 200)
    throw new Error(`admin password grant failed: ${response.status} ${response.text}`);
  return (response.json() as { access_token: string }).access_token;
}

/**
 * One request after another, until SAMPLES of them or SAMPLING_MS (at least MIN_SAMPLES). The
 * first warms up, unless it took seconds (a FerretDB scan), which no warm-up changes.
 */
async function sequentially(
  url: string,
  token: string,
  deadline: number,
): Promise<{ m: Measurement; requests: number }> {
  const get = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await response.arrayBuffer();
    return { ok: response.status === 200, ms: performance.now() - started };
  };
  const first = await get();
  const times = first.ms < 1000 ? [] : [first.ms];
  let failures = first.ok ? 0 : 1;
  const until = performance.now() + SAMPLING_MS;
  const more = () => {
    const now = performance.now();
    if (times.length === 0) return true;
    return now < deadline && (times.length < MIN_SAMPLES || (times.length < SAMPLES && now < until));
  };
  while (more()) {
    const { ok, ms } = await get();
    times.push(ms);
    if (!ok) failures++;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  const mean = times.reduce((sum, ms) => sum + ms, 0) / times.length;
  const m = { rps: 1000 / mean, p50: at(0.5), p99: at(0.99), failures, ok: times.length - failures };
  return { m, requests: times.length };
}

// `node bench/search.ts` runs this part alone (npm run bench runs it with the rest).
if (import.meta.main) {
  try {
    const ms = (value: number) => value.toFixed(value < 10 ? 1 : 0);
    console.log('| scenario | setup | p50 ms | p99 ms | failed |\n|---|---|---:|---:|---:|');
    for (const { name, setup, m } of await measureListings()) {
      console.log(`| ${name} | ${setup} | ${ms(m.p50)} | ${ms(m.p99)} | ${m.failures} |`);
    }
  } finally {
    await stopAll();
  }
}
