/**
 * `npm run bench`: one bounded run on loopback that prints one markdown table.
 *
 * It measures a bare `node:http` server (the ceiling), the service's `GET /`, an authenticated
 * `GET /users/{id}`, the refresh grant and the password grant, with 1 worker on memory stores,
 * 1 worker on real backends and 2 workers on real backends (a private redis-server and
 * FerretDB, started and stopped here), the raw RS256 signing and bcrypt verification rates of
 * all cores, and the p99 of authenticated reads while logins load the CPU.
 *
 * Every comparison is measured in interleaved slices (A, B, A, B, ...) and each figure is the
 * median of its slices: on a shared machine the speed drifts over a run, and pairing the
 * slices keeps that drift out of the ratios. The load generator (autocannon) runs in this
 * process, on the same cores as the servers.
 *
 * Environment: BENCH_SLICE_SECONDS (default 2), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS
 * (default 16), BCRYPT_COST (default 10).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import bcrypt from 'bcryptjs';
import {
  type Backend,
  freePort,
  onPath,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../test/support/backends.ts';
import { decodeJwtPart, FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';
import { type ServiceProcess, send, spawnService, waitForHttp } from '../test/support/processes.ts';

const SLICE = Number(process.env.BENCH_SLICE_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const BCRYPT_COST = Number(process.env.BCRYPT_COST ?? 10);
const CORES = availableParallelism();

interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
}

interface Row {
  name: string;
  setup: string;
  m?: Measurement;
  /** A rate without latency (raw crypto), per second. */
  rate?: number;
  ratio?: string;
  target?: string;
  pass?: boolean;
}

const rows: Row[] = [];
const cleanups: (() => Promise<void>)[] = [];
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

// ---------------------------------------------------------------------------------------------
// Measuring

type Request = autocannon.Request;

async function load(
  url: string,
  options: {
    connections?: number;
    seconds?: number;
    requests?: Request[];
    headers?: Record<string, string>;
    overallRate?: number;
  } = {},
): Promise<Measurement> {
  const result = await autocannon({
    url,
    connections: options.connections ?? CONNECTIONS,
    duration: options.seconds ?? SLICE,
    timeout: 20,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.requests ? { requests: options.requests } : {}),
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
  });
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function medianOf(slices: Measurement[]): Measurement {
  return {
    rps: median(slices.map((s) => s.rps)),
    p50: median(slices.map((s) => s.p50)),
    p99: median(slices.map((s) => s.p99)),
    failures: slices.reduce((sum, s) => sum + s.failures, 0),
  };
}

/** Runs each named measurement once per round, in turn, and gives the median of each. */
async function interleaved<K extends string>(
  label: string,
  measures: Record<K, () => Promise<Measurement>>,
): Promise<Record<K, Measurement>> {
  const slices = Object.fromEntries(Object.keys(measures).map((key) => [key, [] as Measurement[]])) as Record<
    K,
    Measurement[]
  >;
  for (let round = 1; round <= ROUNDS; round++) {
    log(`${label}: round ${round}/${ROUNDS}`);
    for (const key of Object.keys(measures) as K[]) slices[key].push(await measures[key]());
  }
  return Object.fromEntries(
    Object.entries(slices).map(([key, s]) => [key, medianOf(s as Measurement[])]),
  ) as Record<K, Measurement>;
}

const json = (body: unknown): Pick<Request, 'method' | 'headers' | 'body'> => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify(body),
});

const PASSWORD_GRANT = { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER };

async function passwordGrant(url: string): Promise<{ access_token: string; refresh_token: string }> {
  const response = await send(`${url}/security/generate-token`, { method: 'POST', json: PASSWORD_GRANT });
  if (response.status !== 200) throw new Error(`password grant failed: ${response.status} ${response.text}`);
  return response.json() as { access_token: string; refresh_token: string };
}

/**
 * Refresh grants: every request needs a refresh token nobody used yet. A pool of tokens is
 * issued first (by password grants, outside the measured time); each request takes one and
 * each response puts the rotated token back. (autocannon resets a connection's context after
 * every request, so the pool is shared by the connections.)
 */
async function refreshTokenPool(url: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: CONNECTIONS * 2 }, async () => (await passwordGrant(url)).refresh_token),
  );
}

function refreshLoad(url: string, pool: string[]): Promise<Measurement> {
  return load(`${url}/security/refresh-token`, {
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          ...json({
            grant_type: 'refresh_token',
            scope: 'api',
            ...FRONTEND_CLIENT,
            refresh_token: pool.shift(),
          }),
        }),
        onResponse: (status, body) => {
          if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      },
    ],
  });
}

// ---------------------------------------------------------------------------------------------
// Raw rates: what the cores do without the service around the work

function threadRate(source: string, workerData: unknown): Promise<Measurement> {
  return Promise.all(
    Array.from(
      { length: CORES },
      () =>
        new Promise<{ count: number; ms: number }>((resolve, reject) => {
          const worker = new Worker(source, { eval: true, workerData });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  ).then((results) => ({
    rps: results.reduce((sum, { count, ms }) => sum + (count * 1000) / ms, 0),
    p50: 0,
    p99: 0,
    failures: 0,
  }));
}

const SIGNING_KEY = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
}).privateKey;

/** RS256 signatures per second over all cores, node:crypto, a real access token's input size. */
function rawRs256(): Promise<Measurement> {
  return threadRate(
    `const { parentPort, workerData } = require('node:worker_threads');
     const crypto = require('node:crypto');
     const key = crypto.createPrivateKey(workerData.pem);
     const input = Buffer.alloc(600, 97);
     const start = Date.now(); let count = 0;
     while (Date.now() - start < workerData.ms) { crypto.sign('sha256', input, key); count++; }
     parentPort.postMessage({ count, ms: Date.now() - start });`,
    { pem: SIGNING_KEY, ms: SLICE * 1000 },
  );
}

const BCRYPT_HASH = bcrypt.hashSync(SEEDED_USER.password, BCRYPT_COST);

/** bcrypt verifications per second over all cores, bcryptjs as the service uses it. */
function rawBcrypt(): Promise<Measurement> {
  return threadRate(
    `const { parentPort, workerData } = require('node:worker_threads');
     const bcrypt = require(workerData.module);
     const start = Date.now(); let count = 0;
     while (Date.now() - start < workerData.ms) { bcrypt.compareSync(workerData.password, workerData.hash); count++; }
     parentPort.postMessage({ count, ms: Date.now() - start });`,
    {
      module: createRequire(import.meta.url).resolve('bcryptjs'),
      password: SEEDED_USER.password,
      hash: BCRYPT_HASH,
      ms: SLICE * 1000,
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Servers

async function startBare(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer({ keepAliveTimeout: 65000 }, (req, res) => {
         res.setHeader('Content-Type', 'application/json');
         res.end(JSON.stringify({ name: 'token-service', version: '1.0.0' }));
       }).listen(${port}, '127.0.0.1');`,
    ],
    { stdio: 'ignore' },
  );
  cleanups.push(async () => void child.kill());
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(url);
  return { url, child };
}

async function startService(env: Record<string, string>): Promise<ServiceProcess> {
  const cwd = await mkdtemp(join(tmpdir(), 'bench-'));
  cleanups.push(() => rm(cwd, { recursive: true, force: true }));
  const service = spawnService({
    cwd,
    env: {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      KEYS_DIR: join(cwd, 'keys'),
      LOG_DIR: join(cwd, 'log'),
      BCRYPT_COST: String(BCRYPT_COST),
      ...env,
    },
  });
  cleanups.push(() => service.stop());
  await waitForHttp(service.url, { service, timeoutMs: 60_000 });
  const workers = Number(env.WORKERS ?? 1);
  await service.waitForRecord((record) => String(record.msg).startsWith(`All ${workers} worker(s) serving`));
  return service;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Reads {
  readUrl: string;
  auth: Record<string, string>;
}

async function prepareReads(url: string): Promise<Reads> {
  const tokens = await passwordGrant(url);
  return {
    readUrl: `${url}/users/${String(decodeJwtPart(tokens.access_token, 1).sub)}`,
    auth: { authorization: `Bearer ${tokens.access_token}` },
  };
}

const times = (m: Measurement, base: Measurement, unit: string) =>
  `${(m.rps / base.rps).toFixed(2)}× ${unit}`;

async function measureService(setup: string, service: ServiceProcess, bareUrl: string) {
  const { url } = service;
  const reads = await prepareReads(url);
  // Warm-up: JIT, connection pools, key caches.
  await load(url, { seconds: 1 });
  await load(reads.readUrl, { seconds: 1, headers: reads.auth });

  const http = await interleaved(`${setup}: bare, GET /, GET /users/{id}`, {
    bare: () => load(bareUrl),
    home: () => load(url),
    read: () => load(reads.readUrl, { headers: reads.auth }),
  });
  rows.push({ name: 'GET /', setup, m: http.home, ratio: times(http.home, http.bare, 'bare') });
  rows.push({
    name: 'GET /users/{id} (Bearer)',
    setup,
    m: http.read,
    ratio: times(http.read, http.bare, 'bare'),
  });

  const refresh = await interleaved(`${setup}: raw RS256, refresh grant`, {
    raw: rawRs256,
    // A fresh pool for every slice: tokens in flight when a slice ends are spent but never answered.
    grant: async () => refreshLoad(url, await refreshTokenPool(url)),
  });
  rows.push({
    name: 'refresh grant',
    setup,
    m: refresh.grant,
    ratio: times(refresh.grant, refresh.raw, 'raw RS256'),
  });

  const password = await interleaved(`${setup}: raw bcrypt, password grant`, {
    raw: rawBcrypt,
    // More connections than hashing threads would only lengthen the queue.
    grant: () => load(`${url}/security/generate-token`, { connections: 4, requests: [json(PASSWORD_GRANT)] }),
  });
  rows.push({
    name: 'password grant',
    setup,
    m: password.grant,
    ratio: times(password.grant, password.raw, 'raw bcrypt'),
  });
  return { http, refresh, password, reads };
}

function findRow(name: string, setup: string): Row | undefined {
  return rows.find((row) => row.name === name && row.setup === setup);
}

function mark(row: Row | undefined, target: string, pass: boolean): void {
  if (!row) return;
  row.target = target;
  row.pass = pass;
}

async function main(): Promise<void> {
  const started = Date.now();
  // Anything else running on these cores shows up in every number below.
  const loadBefore = loadavg()[0] ?? 0;
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  log(
    `${CORES} cores (${cpu}), Node ${process.version}, ${ROUNDS} × ${SLICE} s slices, ${CONNECTIONS} connections`,
  );

  const bare = await startBare();
  await load(bare.url, { seconds: 1 });

  // 1 worker, memory stores.
  const memory = await startService({});
  const mem = await measureService('1 worker, memory', memory, bare.url);
  rows.unshift(
    { name: `raw RS256 sign (node:crypto)`, setup: `${CORES} threads`, rate: mem.refresh.raw.rps },
    {
      name: `raw bcrypt verify (cost ${BCRYPT_COST})`,
      setup: `${CORES} threads`,
      rate: mem.password.raw.rps,
    },
    { name: 'GET / (bare node:http)', setup: '1 process', m: mem.http.bare, ratio: '1.00× bare' },
  );
  const rate = (m: Measurement) =>
    load(mem.reads.readUrl, { headers: mem.reads.auth, connections: 4, overallRate: m.rps });
  const readRate = { rps: 200, p50: 0, p99: 0, failures: 0 };
  const underLogins = await interleaved('GET /users/{id} at 200/s alone and during password grants', {
    alone: () => rate(readRate),
    during: async () => {
      const [reads] = await Promise.all([
        rate(readRate),
        load(`${memory.url}/security/generate-token`, { connections: 8, requests: [json(PASSWORD_GRANT)] }),
      ]);
      return reads;
    },
  });
  await memory.stop();
  const p99Ratio = underLogins.during.p99 / Math.max(underLogins.alone.p99, 1);
  rows.push(
    { name: 'GET /users/{id} at 200/s, alone', setup: '1 worker, memory', m: underLogins.alone },
    {
      name: 'GET /users/{id} at 200/s, during logins',
      setup: '1 worker, memory',
      m: underLogins.during,
      ratio: `p99 ${p99Ratio.toFixed(2)}× alone`,
    },
  );

  mark(findRow('GET /', '1 worker, memory'), '≥ 0.8× bare', mem.http.home.rps >= 0.8 * mem.http.bare.rps);
  mark(
    findRow('GET /users/{id} (Bearer)', '1 worker, memory'),
    '≥ 0.5× bare',
    mem.http.read.rps >= 0.5 * mem.http.bare.rps,
  );
  mark(
    findRow('refresh grant', '1 worker, memory'),
    '≥ 0.7× raw RS256',
    mem.refresh.grant.rps >= 0.7 * mem.refresh.raw.rps,
  );
  mark(
    findRow('password grant', '1 worker, memory'),
    'within 10% of raw bcrypt',
    mem.password.grant.rps >= 0.9 * mem.password.raw.rps,
  );
  mark(
    findRow('GET /users/{id} at 200/s, during logins', '1 worker, memory'),
    'p99 ≤ 2× alone',
    p99Ratio <= 2,
  );

  // Real backends: 1 worker, then 2 workers, over the same private servers.
  const missing = ['redis-server', 'ferretdb'].filter((binary) => !onPath(binary));
  if (missing.length > 0) {
    log(`skipping the real-backend runs: ${missing.join(' and ')} not on PATH`);
  } else {
    let redis: Backend | undefined;
    let ferret: Backend | undefined;
    try {
      [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
      const backends = { MONGODB_URL: withDatabase(ferret.url, uniqueName('bench')), REDIS_URL: redis.url };
      const one = await startService({ ...backends, WORKERS: '1' });
      const real1 = await measureService('1 worker, real', one, bare.url);
      const two = await startService({ ...backends, WORKERS: '2' });
      const real2 = await measureService('2 workers, real', two, bare.url);
      // Scaling: both services run; their reads are measured in turn.
      const scaling = await interleaved('GET /users/{id}: 1 worker vs 2 workers', {
        one: () => load(real1.reads.readUrl, { headers: real1.reads.auth }),
        two: () => load(real2.reads.readUrl, { headers: real2.reads.auth }),
      });
      await Promise.all([one.stop(), two.stop()]);
      const factor = scaling.two.rps / scaling.one.rps;
      rows.push(
        { name: 'GET /users/{id} (Bearer), paired', setup: '1 worker, real', m: scaling.one },
        {
          name: 'GET /users/{id} (Bearer), paired',
          setup: '2 workers, real',
          m: scaling.two,
          ratio: `${factor.toFixed(2)}× 1 worker`,
        },
      );
      mark(findRow('GET /users/{id} (Bearer), paired', '2 workers, real'), '≥ 1.3× 1 worker', factor >= 1.3);
    } finally {
      await Promise.all([redis?.dispose(), ferret?.dispose()]);
    }
  }
  bare.child.kill();
  printTable(cpu, Math.round((Date.now() - started) / 1000), loadBefore);
}

function printTable(cpu: string, seconds: number, loadBefore: number): void {
  const fmt = (value: number | undefined) => (value === undefined ? '' : value.toFixed(0));
  // autocannon records latency in whole milliseconds.
  const ms = (value: number | undefined) => (value === undefined ? '' : value < 1 ? '<1' : value.toFixed(0));
  const lines = [
    `Bench: ${CORES} cores (${cpu}), Node ${process.version}, loopback; each figure the median of ${ROUNDS} ` +
      `interleaved ${SLICE} s slices; ${CONNECTIONS} connections (password grant 4); BCRYPT_COST ${BCRYPT_COST}; ` +
      `total ${seconds} s; 1-min load average before the run ${loadBefore.toFixed(2)}`,
    '',
    '| scenario | setup | req/s | p50 ms | p99 ms | failed | ratio | target | result |',
    '|---|---|---:|---:|---:|---:|---|---|---|',
    ...rows.map((row) =>
      [
        '',
        row.name,
        row.setup,
        row.m ? fmt(row.m.rps) : `${fmt(row.rate)} /s`,
        ms(row.m?.p50),
        ms(row.m?.p99),
        row.m ? String(row.m.failures) : '',
        row.ratio ?? '',
        row.target ?? '',
        row.pass === undefined ? '' : row.pass ? 'pass' : '**miss**',
        '',
      ]
        .join(' | ')
        .trim(),
    ),
  ];
  console.log(lines.join('\n'));
}

try {
  await main();
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
}
