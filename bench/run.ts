/**
 * `npm run bench`: one bounded run on loopback that prints one markdown table.
 *
 * It measures a bare `node:http` server (the ceiling), the service's `GET /`, an authenticated
 * `GET /users/{id}`, the refresh grant and the password grant, with 1 worker on memory stores,
 * 1 worker on real backends and 2 workers on real backends (a private redis-server and
 * FerretDB, started and stopped here), the raw RS256 signing and bcrypt verification rates of
 * all cores, and the p99 of authenticated reads while logins load the CPU. Then, side by side:
 * `client_credentials` on the service and on node-oidc-provider 9 (bench/oidc-provider-peer.ts,
 * 1 process and a 2-worker cluster), reads and refresh grants across the three setups, and the
 * Redis memory that refresh-token sessions hold (on a Redis of its own).
 *
 * Every comparison is measured in interleaved slices (A, B, A, B, ...) and each figure is the
 * median of its slices: on a shared machine the speed drifts over a run, and pairing the
 * slices keeps that drift out of the ratios. The load generator (autocannon) runs in this
 * process, on the same cores as the servers.
 *
 * Environment: BENCH_SLICE_SECONDS (default 2), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS
 * (default 16), BCRYPT_COST (default 10).
 */
import { generateKeyPairSync } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import { onPath, startFerretDb, startRedis, uniqueName, withDatabase } from '../test/support/backends.ts';
import { decodeJwtPart, FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';
import type { ServiceProcess } from '../test/support/processes.ts';
import { childrenNamed, cpuDuring, type ProcessGroups, processTree } from './cpu.ts';
import {
  CONNECTIONS,
  interleaved,
  json,
  load,
  log,
  type Measurement,
  PASSWORD_GRANT,
  passwordGrant,
  ROUNDS,
  refreshLoad,
  refreshTokenPool,
  SLICE,
} from './load.ts';
import { PEER_CLIENT, PEER_RESOURCE, PEER_SCOPE } from './oidc-provider-peer.ts';
import { FURTHER_REFRESHES, measureSessionMemory, REFRESHES } from './redis-memory.ts';
import { measureListings } from './search.ts';
import {
  BCRYPT_COST,
  type Server,
  startBare,
  startPeer,
  startService,
  stopAll,
  stopLater,
} from './servers.ts';

const CORES = availableParallelism();
/** The whole run stops, cleaning up, if it takes longer than this. */
const TIME_LIMIT_MS = 12 * 60_000;

interface Check {
  target: string;
  pass: boolean;
}

interface Row {
  name: string;
  setup: string;
  m?: Measurement;
  /** A figure that is not a request rate (raw crypto per second, bytes), with its unit. */
  figure?: string;
  ratio?: string;
  checks?: Check[];
}

const rows: Row[] = [];

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
// Scenarios

interface Reads {
  readUrl: string;
  auth: Record<string, string>;
}

/** A service and the authenticated read measured on it. */
interface Measured {
  server: Server;
  reads: Reads;
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
  log(`${setup}: measuring`);
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
  if (row) row.checks = [...(row.checks ?? []), { target, pass }];
}

// ---------------------------------------------------------------------------------------------
// Side by side: the production shape against the embedded one and against oidc-provider

/** The processes whose CPU a paired row reports, in the order of the table's CPU column. */
function cpuGroups(server: Server): ProcessGroups {
  return {
    'load generator': [process.pid],
    server: processTree(server.pid),
    FerretDB: childrenNamed('ferretdb'),
    Redis: childrenNamed('redis-server'),
  };
}

async function withCpu(groups: ProcessGroups, measure: () => Promise<Measurement>): Promise<Measurement> {
  const { result, cores } = await cpuDuring(groups, measure);
  return { ...result, cpu: cores };
}

/** The request of the client_credentials comparison, the same bytes to both servers. */
const CLIENT_CREDENTIALS_BODY = new URLSearchParams({
  grant_type: 'client_credentials',
  scope: PEER_SCOPE,
  resource: PEER_RESOURCE,
}).toString();
/** Enough connections to keep every contender busy, oidc-provider's 2-worker cluster too. */
const CLIENT_CREDENTIALS_CONNECTIONS = 50;
const CLIENT_CREDENTIALS_WARM_UP_SECONDS = 6;

function clientCredentialsLoad(tokenUrl: string, client: { client_id: string; client_secret: string }) {
  const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
  return (seconds = SLICE) =>
    load(tokenUrl, {
      seconds,
      connections: CLIENT_CREDENTIALS_CONNECTIONS,
      requests: [
        {
          method: 'POST',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: CLIENT_CREDENTIALS_BODY,
        },
      ],
    });
}

async function compareClientCredentials(memory: Server, real: Server): Promise<void> {
  const [peer1, peer2] = [await startPeer(1), await startPeer(2)];
  const contenders = {
    peer1: clientCredentialsLoad(`${peer1.url}/token`, PEER_CLIENT),
    peer2: clientCredentialsLoad(`${peer2.url}/token`, PEER_CLIENT),
    memory: clientCredentialsLoad(`${memory.url}/security/generate-token`, FRONTEND_CLIENT),
    real: clientCredentialsLoad(`${real.url}/security/generate-token`, FRONTEND_CLIENT),
  };
  // Warm-up: oidc-provider takes about 30,000 requests to reach its steady speed here (the JIT).
  log('client_credentials: warm-up');
  for (const measure of Object.values(contenders)) await measure(CLIENT_CREDENTIALS_WARM_UP_SECONDS);
  const m = await interleaved('client_credentials: oidc-provider 1 and 2 processes, ours memory and real', {
    peer1: () => withCpu(cpuGroups(peer1), () => contenders.peer1()),
    peer2: () => withCpu(cpuGroups(peer2), () => contenders.peer2()),
    memory: () => withCpu(cpuGroups(memory), () => contenders.memory()),
    real: () => withCpu(cpuGroups(real), () => contenders.real()),
  });
  await Promise.all([peer1.stop(), peer2.stop()]);
  const better = m.peer1.rps >= m.peer2.rps ? 'peer1' : 'peer2';
  const name = `client_credentials (Basic, c=${CLIENT_CREDENTIALS_CONNECTIONS}), paired`;
  const vsPeer = (x: Measurement) => `${(x.rps / m[better].rps).toFixed(2)}× oidc-provider`;
  const vsMemory = m.real.rps / m.memory.rps;
  rows.push(
    { name, setup: 'oidc-provider 9, 1 process', m: m.peer1 },
    { name, setup: 'oidc-provider 9, 2-worker cluster', m: m.peer2 },
    { name, setup: '1 worker, memory', m: m.memory, ratio: vsPeer(m.memory) },
    {
      name,
      setup: '2 workers, real',
      m: m.real,
      ratio: `${vsPeer(m.real)}; ${vsMemory.toFixed(2)}× 1 worker memory`,
      checks: [
        {
          target: `≥ 1.1× oidc-provider's better (${better === 'peer1' ? '1 process' : 'cluster'})`,
          pass: m.real.rps >= 1.1 * m[better].rps,
        },
        { target: '≥ 0.9× 1 worker memory', pass: vsMemory >= 0.9 },
      ],
    },
  );
}

async function compareReads(memory: Measured, real1: Measured, real2: Measured): Promise<void> {
  const read =
    ({ server, reads }: Measured) =>
    () =>
      withCpu(cpuGroups(server), () => load(reads.readUrl, { headers: reads.auth }));
  const m = await interleaved('GET /users/{id}: 1 worker memory, 1 worker real, 2 workers real', {
    memory: read(memory),
    real1: read(real1),
    real2: read(real2),
  });
  const vsMemory = m.real2.rps / m.memory.rps;
  const vsOne = m.real2.rps / m.real1.rps;
  const name = 'GET /users/{id} (Bearer), paired';
  rows.push(
    { name, setup: '1 worker, memory', m: m.memory },
    { name, setup: '1 worker, real', m: m.real1 },
    {
      name,
      setup: '2 workers, real',
      m: m.real2,
      ratio: `${vsMemory.toFixed(2)}× 1 worker memory; ${vsOne.toFixed(2)}× 1 worker real`,
      checks: [
        { target: '≥ 0.8× 1 worker memory', pass: vsMemory >= 0.8 },
        { target: '≥ 1.3× 1 worker real', pass: vsOne >= 1.3 },
      ],
    },
  );
}

async function compareRefresh(memory: Server, real: Server): Promise<void> {
  // A fresh pool for every slice: tokens in flight when a slice ends are spent but never answered.
  const grant = (server: Server) => async () => {
    const pool = await refreshTokenPool(server.url);
    return withCpu(cpuGroups(server), () => refreshLoad(server.url, pool));
  };
  const m = await interleaved('refresh grant: 1 worker memory, 2 workers real', {
    memory: grant(memory),
    real: grant(real),
  });
  const ratio = m.real.rps / m.memory.rps;
  const name = 'refresh grant, paired';
  rows.push(
    { name, setup: '1 worker, memory', m: m.memory },
    {
      name,
      setup: '2 workers, real',
      m: m.real,
      ratio: `${ratio.toFixed(2)}× 1 worker memory`,
      checks: [{ target: '≥ 0.7× 1 worker memory', pass: ratio >= 0.7 }],
    },
  );
}

async function reportSessionMemory(mongoUrl: string): Promise<void> {
  const memory = await measureSessionMemory(mongoUrl);
  const setup = `${memory.sessions} sessions, 2 workers, real (${memory.failures} failed)`;
  rows.push(
    {
      name: `Redis used_memory per session after ${REFRESHES} refreshes each`,
      setup,
      figure: `${memory.perSession.toFixed(0)} B`,
      checks: [{ target: '≤ 500 B', pass: memory.perSession <= 500 }],
    },
    {
      name: `its growth per session over ${FURTHER_REFRESHES} more refreshes each`,
      setup,
      figure: `${memory.growthPerSession.toFixed(0)} B`,
      // ~0: allocator rounding aside, a session's state does not grow with its rotations.
      checks: [{ target: '≤ 50 B (~0)', pass: memory.growthPerSession <= 50 }],
    },
  );
}

// ---------------------------------------------------------------------------------------------

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

  // 1 worker, memory stores: measured alone first, and kept running for the comparisons.
  const memory = await startService({});
  const mem = await measureService('1 worker, memory', memory, bare.url);
  rows.unshift(
    {
      name: `raw RS256 sign (node:crypto)`,
      setup: `${CORES} threads`,
      figure: `${mem.refresh.raw.rps.toFixed(0)} /s`,
    },
    {
      name: `raw bcrypt verify (cost ${BCRYPT_COST})`,
      setup: `${CORES} threads`,
      figure: `${mem.password.raw.rps.toFixed(0)} /s`,
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
    const [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    stopLater(() => ferret.dispose());
    stopLater(() => redis.dispose());
    const backends = { MONGODB_URL: withDatabase(ferret.url, uniqueName('bench')), REDIS_URL: redis.url };
    const one = await startService({ ...backends, WORKERS: '1' });
    const real1 = await measureService('1 worker, real', one, bare.url);
    const two = await startService({ ...backends, WORKERS: '2' });
    const real2 = await measureService('2 workers, real', two, bare.url);
    await compareClientCredentials(memory, two);
    await compareReads(
      { server: memory, reads: mem.reads },
      { server: one, reads: real1.reads },
      { server: two, reads: real2.reads },
    );
    await compareRefresh(memory, two);
    await Promise.all([memory.stop(), one.stop(), two.stop()]);
    await reportSessionMemory(ferret.url);
  }
  // The account listings over 100,000 users, on memory and FerretDB (bench/search.ts).
  rows.push(...(await measureListings()));
  printTable(cpu, Math.round((Date.now() - started) / 1000), loadBefore);
}

function printTable(cpu: string, seconds: number, loadBefore: number): void {
  const fmt = (value: number) => value.toFixed(0);
  // autocannon records latency in whole milliseconds.
  const ms = (value: number | undefined) => (value === undefined ? '' : value < 1 ? '<1' : value.toFixed(0));
  const lines = [
    `Bench: ${CORES} cores (${cpu}), Node ${process.version}, loopback; each figure the median of ${ROUNDS} ` +
      `interleaved ${SLICE} s slices; ${CONNECTIONS} connections (password grant 4, client_credentials ` +
      `${CLIENT_CREDENTIALS_CONNECTIONS}); BCRYPT_COST ${BCRYPT_COST}; total ${seconds} s; ` +
      `1-min load average before the run ${loadBefore.toFixed(2)}`,
    '',
    '| scenario | setup | req/s | p50 ms | p99 ms | failed | ratio | target | result | CPU cores: load generator / server / FerretDB / Redis |',
    '|---|---|---:|---:|---:|---:|---|---|---|---|',
    ...rows.map((row) =>
      [
        '',
        row.name,
        row.setup,
        row.m ? fmt(row.m.rps) : (row.figure ?? ''),
        ms(row.m?.p50),
        ms(row.m?.p99),
        row.m ? String(row.m.failures) : '',
        row.ratio ?? '',
        (row.checks ?? []).map((check) => check.target).join('; '),
        (row.checks ?? []).map((check) => (check.pass ? 'pass' : '**miss**')).join('; '),
        row.m?.cpu
          ? Object.values(row.m.cpu)
              .map((cores) => cores.toFixed(2))
              .join(' / ')
          : '',
        '',
      ]
        .join(' | ')
        .trim(),
    ),
  ];
  console.log(lines.join('\n'));
}

// A run interrupted or overrunning its limit still stops everything it started.
process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));
setTimeout(() => {
  log(`stopping: the run took longer than ${TIME_LIMIT_MS / 60_000} minutes`);
  void stopAll().finally(() => process.exit(1));
}, TIME_LIMIT_MS).unref();

try {
  await main();
} finally {
  await stopAll();
}
