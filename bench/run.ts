/**
 * `npm run bench`: one bounded run on loopback that prints one markdown table.
 *
 * It measures a bare `node:http` server (the ceiling), the service's `GET /`, an authenticated
 * `GET /users/{id}`, the refresh grant and the password grant, with 1 worker on memory stores,
 * 1 worker on real backends and 2 workers on real backends (a private redis-server and
 * FerretDB, started and stopped here), the raw RS256 signing and bcrypt verification rates of
 * all cores, and the p99 of authenticated reads while logins load the CPU. Then, side by side:
 * `client_credentials` on the service, on node-oidc-provider 9 (bench/oidc-provider-peer.ts,
 * 1 process and a 2-worker cluster) and on @node-oauth/oauth2-server 5 with a lean model
 * (bench/oauth2-server-peer.ts, 1 process), and on the floor under a server that signs our
 * token: a bare server that reads the body and signs, checking nothing (bench/floor-peer.ts);
 * the refresh and password grants on the service and on oauth2-server; reads across the
 * three setups of the service, and refresh grants on them
 * and behind Sentinels and in a Cluster with a replica acknowledging every rotation, each setup's refresh grant
 * beside its `client_credentials` grant on as many connections; and the Redis memory that
 * refresh-token sessions hold (on a Redis of its own), within the retry window and after it;
 * the account listings (bench/search.ts), and avatar uploads: one's cost, and `GET /` beside 20
 * concurrent 1 MB uploads (bench/avatars.ts).
 *
 * Every row that loads a server also gives the server's CPU time (user + system of all its
 * processes, from /proc) per request answered 2xx: on a token row, the CPU one token costs.
 *
 * Every comparison is measured in interleaved slices (A, B, A, B, ...) and each figure is the
 * median of its slices: on a shared machine the speed drifts over a run, and pairing the
 * slices keeps that drift out of the ratios. The load generator (autocannon) runs in this
 * process, on the same cores as the servers.
 *
 * Environment: BENCH_SLICE_SECONDS (default 2), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS
 * (default 16), BCRYPT_COST (default 10), BENCH_ONLY (the sections to run, as the arguments).
 *
 *   npm run bench [-- <section> ...]
 *
 * With sections named (SECTIONS below), only those run, on memory stores unless `real` is
 * among them; with none, everything runs.
 */
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import {
  onPath,
  startClusterSetup,
  startFerretDb,
  startRedis,
  startSentinelSetup,
  uniqueName,
  withDatabase,
} from '../test/support/backends.ts';
import { decodeJwtPart, FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';
import type { ServiceProcess } from '../test/support/processes.ts';
import { measureAvatars } from './avatars.ts';
import { childrenNamed, cpuDuring, type ProcessGroups, processTree } from './cpu.ts';
import {
  CLIENT_CREDENTIALS_CONNECTIONS,
  CONNECTIONS,
  clientCredentialsLoad,
  interleaved,
  load,
  log,
  type Measurement,
  ours,
  passwordGrant,
  passwordLoad,
  peer,
  ROUNDS,
  refreshLoad,
  refreshTokenPool,
  SLICE,
  type TokenEndpoints,
} from './load.ts';
import { PEER_CLIENT } from './oidc-provider-peer.ts';
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

/** The parts of a run that `npm run bench -- <section> ...` (or BENCH_ONLY) can pick. */
const SECTIONS = ['service', 'cc', 'reads', 'refresh', 'password', 'sessions', 'listings', 'avatars', 'real'];
const only = new Set(
  [...process.argv.slice(2), ...(process.env.BENCH_ONLY ?? '').split(/[\s,]+/)].filter(Boolean),
);
for (const section of only) {
  if (!SECTIONS.includes(section))
    throw new Error(`unknown section ${section}: one of ${SECTIONS.join(', ')}`);
}
const runs = (section: string) => only.size === 0 || only.has(section);
/** The real backends: for a whole run, or a partial one that names them or a section that needs them. */
const withRealBackends = only.size === 0 || ['real', 'reads', 'sessions'].some((s) => only.has(s));
/**
 * The whole run stops, cleaning up, if it takes longer than this, and prints the rows it has:
 * on a slow machine the listings on FerretDB alone take about four minutes.
 */
const TIME_LIMIT_MS = 15 * 60_000;
const RUN_STARTED = Date.now();
/** What the table's first line says of the machine, as the run began. */
const LOAD_BEFORE = loadavg()[0] ?? 0;
const CPU_MODEL = cpus()[0]?.model ?? 'unknown CPU';

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
    ok: results.reduce((sum, { count }) => sum + count, 0),
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

const POOL_SIGNING_KEY = createPrivateKey(SIGNING_KEY);
/** libuv's default; the service's worker and this process inherit the same environment. */
const THREAD_POOL = Number(process.env.UV_THREADPOOL_SIZE ?? 4);

/**
 * RS256 signatures per second on this process's thread pool (`crypto.sign` with a callback, as
 * the service signs), a real access token's input size: what one worker's signing can reach.
 */
function rawPoolRs256(): Promise<Measurement> {
  const input = Buffer.alloc(600, 97);
  const inFlight = THREAD_POOL * 4;
  return new Promise((resolve, reject) => {
    const start = Date.now();
    let count = 0;
    let running = 0;
    let failed: Error | undefined;
    const next = () => {
      running++;
      sign('sha256', input, POOL_SIGNING_KEY, (error) => {
        running--;
        if (error) failed = error;
        else count++;
        if (!failed && Date.now() - start < SLICE * 1000) next();
        else if (running === 0) {
          if (failed) reject(failed);
          else
            resolve({ rps: (count * 1000) / (Date.now() - start), p50: 0, p99: 0, failures: 0, ok: count });
        }
      });
    };
    for (let i = 0; i < inFlight; i++) next();
  });
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
  const tokens = await passwordGrant(ours(url));
  return {
    readUrl: `${url}/users/${String(decodeJwtPart(tokens.access_token, 1).sub)}`,
    auth: { authorization: `Bearer ${tokens.access_token}` },
  };
}

const times = (m: Measurement, base: Measurement, unit: string) =>
  `${(m.rps / base.rps).toFixed(2)}× ${unit}`;

async function measureService(setup: string, service: ServiceProcess, bare: Server) {
  log(`${setup}: measuring`);
  const { url } = service;
  const endpoints = ours(url);
  const reads = await prepareReads(url);
  // Warm-up: JIT, connection pools, key caches.
  await load(url, { seconds: 1 });
  await load(reads.readUrl, { seconds: 1, headers: reads.auth });

  const http = await interleaved(`${setup}: bare, GET /, GET /users/{id}`, {
    bare: () => withCpu(cpuGroups(bare), () => load(bare.url)),
    home: () => withCpu(cpuGroups(service), () => load(url)),
    read: () => withCpu(cpuGroups(service), () => load(reads.readUrl, { headers: reads.auth })),
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
    grant: async () => {
      const pool = await refreshTokenPool(endpoints);
      return withCpu(cpuGroups(service), () => refreshLoad(endpoints, pool));
    },
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
    grant: () => withCpu(cpuGroups(service), () => passwordLoad(endpoints, { connections: 4 })),
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
  const { result, seconds, cores } = await cpuDuring(groups, measure);
  return {
    ...result,
    cpu: cores,
    serverMsPerRequest: ((seconds.server ?? 0) * 1000) / Math.max(result.ok, 1),
  };
}

const CLIENT_CREDENTIALS_WARM_UP_SECONDS = 6;

/** Server CPU per token of `m` over that of `other`. */
function cpuRatio(m: Measurement, other: Measurement): number {
  return (m.serverMsPerRequest ?? 0) / Math.max(other.serverMsPerRequest ?? 0, Number.EPSILON);
}

/** A rate and a CPU per token next to node-oauth2-server's. */
function ratioToPeer(m: Measurement, peer: Measurement): string {
  const cpu = cpuRatio(m, peer);
  const rate = peer.rps > 0 ? `${(m.rps / peer.rps).toFixed(2)}×` : 'no rate for';
  return `${rate} oauth2-server; CPU/token ${cpu.toFixed(2)}× its`;
}

/**
 * What the service's figures are next to node-oauth2-server's (signing on its thread pool, as
 * the service does): request rate and server CPU per token, with the targets: CPU per token at
 * most `cpu`× its, and, where given, a rate at least `rate`× its.
 */
function versusPeer(
  m: Measurement,
  peer: Measurement,
  targets: { rate?: number; cpu: number },
): { ratio: string; checks: Check[] } {
  const cpu = cpuRatio(m, peer);
  const { rate: rateTarget, cpu: cpuTarget } = targets;
  return {
    ratio: ratioToPeer(m, peer),
    checks: [
      ...(rateTarget
        ? [{ target: `≥ ${rateTarget}× oauth2-server`, pass: m.rps >= rateTarget * peer.rps }]
        : []),
      { target: `CPU/token ≤ ${cpuTarget}× oauth2-server's`, pass: cpu <= cpuTarget },
    ],
  };
}

/** Issue 29: ahead of the fair peer on `client_credentials` and refresh. */
const AHEAD_OF_PEER = { rate: 1.1, cpu: 0.9 };

/** A refresh rate over the client_credentials rate of the same setup, paired: at least 0.9×. */
function versusCredentials(refresh: Measurement, credentials: Measurement): { ratio: string; check: Check } {
  const ratio = refresh.rps / Math.max(credentials.rps, Number.EPSILON);
  return {
    ratio: `${ratio.toFixed(2)}× client_credentials`,
    check: { target: '≥ 0.9× client_credentials', pass: ratio >= 0.9 },
  };
}

/** A measurement by name, from comparisons whose contenders depend on what the machine has. */
function measured(m: Record<string, Measurement>, key: string): Measurement {
  const found = m[key];
  if (!found) throw new Error(`no measurement named ${key}`);
  return found;
}

const NODE_OAUTH = '@node-oauth/oauth2-server 5, 1 process, signing on its thread pool';
const NODE_OAUTH_LOOP = '@node-oauth/oauth2-server 5, 1 process, signing on its event loop';
const FLOOR = 'the floor: node:http reading the body and signing on its thread pool, checking nothing';

async function compareClientCredentials(memory: Server, real: Server | undefined, nodeOauth: Server) {
  const [peer1, peer2] = [await startPeer('oidc-provider', 1), await startPeer('oidc-provider', 2)];
  const nodeOauthLoop = await startPeer('oauth2-server-loop');
  const floor = await startPeer('floor');
  const contenders = {
    floor: clientCredentialsLoad(`${floor.url}/token`, FRONTEND_CLIENT),
    peer1: clientCredentialsLoad(`${peer1.url}/token`, PEER_CLIENT),
    peer2: clientCredentialsLoad(`${peer2.url}/token`, PEER_CLIENT),
    nodeOauth: clientCredentialsLoad(peer(nodeOauth.url).token, FRONTEND_CLIENT),
    nodeOauthLoop: clientCredentialsLoad(peer(nodeOauthLoop.url).token, FRONTEND_CLIENT),
    memory: clientCredentialsLoad(ours(memory.url).token, FRONTEND_CLIENT),
    ...(real ? { real: clientCredentialsLoad(ours(real.url).token, FRONTEND_CLIENT) } : {}),
  };
  const servers: Record<string, Server> = {
    floor,
    peer1,
    peer2,
    nodeOauth,
    nodeOauthLoop,
    memory,
    ...(real ? { real } : {}),
  };
  // Warm-up: oidc-provider takes about 30,000 requests to reach its steady speed here (the JIT).
  log('client_credentials: warm-up');
  for (const measure of Object.values(contenders)) await measure(CLIENT_CREDENTIALS_WARM_UP_SECONDS);
  const m: Record<string, Measurement> = await interleaved(
    'client_credentials: the floor, oidc-provider 1 and 2 processes, oauth2-server (pool, loop), raw pool RS256, ours memory and real',
    {
      ...Object.fromEntries(
        Object.entries(contenders).map(([key, measure]) => [
          key,
          () => withCpu(cpuGroups(servers[key] as Server), () => measure()),
        ]),
      ),
      rawPool: rawPoolRs256,
    },
  );
  await Promise.all([floor.stop(), peer1.stop(), peer2.stop(), nodeOauthLoop.stop()]);
  const oidc1 = measured(m, 'peer1');
  const oidc2 = measured(m, 'peer2');
  const oauth2 = measured(m, 'nodeOauth');
  const mem = measured(m, 'memory');
  const better = oidc1.rps >= oidc2.rps ? oidc1 : oidc2;
  const name = `client_credentials (Basic, c=${CLIENT_CREDENTIALS_CONNECTIONS}), paired`;
  const vsOidc = (x: Measurement) => `${(x.rps / better.rps).toFixed(2)}× oidc-provider`;
  const memoryVsPeer = versusPeer(mem, oauth2, AHEAD_OF_PEER);
  const rawPool = measured(m, 'rawPool');
  const vsRaw = (x: Measurement) =>
    `${(x.rps / Math.max(rawPool.rps, Number.EPSILON)).toFixed(2)}× raw RS256 on 1 process's pool`;
  const bottom = measured(m, 'floor');
  const vsFloor = cpuRatio(mem, bottom);
  rows.push(
    {
      name: 'raw RS256 sign (node:crypto, with a callback), paired with client_credentials',
      setup: `1 process's thread pool (UV_THREADPOOL_SIZE ${THREAD_POOL})`,
      figure: `${rawPool.rps.toFixed(0)} /s`,
    },
    { name, setup: 'oidc-provider 9, 1 process', m: oidc1 },
    { name, setup: 'oidc-provider 9, 2-worker cluster', m: oidc2 },
    { name, setup: NODE_OAUTH_LOOP, m: measured(m, 'nodeOauthLoop') },
    { name, setup: NODE_OAUTH, m: oauth2 },
    {
      name,
      setup: FLOOR,
      m: bottom,
      ratio: `${ratioToPeer(bottom, oauth2)}; ${vsRaw(bottom)}`,
    },
    {
      name,
      setup: '1 worker, memory',
      m: mem,
      ratio: `${vsOidc(mem)}; ${memoryVsPeer.ratio}; ${vsRaw(mem)}; CPU/token ${vsFloor.toFixed(2)}× the floor's`,
      checks: [
        ...memoryVsPeer.checks,
        { target: "≥ 0.85× raw RS256 on 1 process's pool", pass: mem.rps >= 0.85 * rawPool.rps },
      ],
    },
  );
  if (!real) return;
  const two = measured(m, 'real');
  const vsMemory = two.rps / mem.rps;
  rows.push({
    name,
    setup: '2 workers, real',
    m: two,
    ratio: `${vsOidc(two)}; ${vsMemory.toFixed(2)}× 1 worker memory`,
    checks: [
      {
        target: `≥ 1.1× oidc-provider's better (${better === oidc1 ? '1 process' : 'cluster'})`,
        pass: two.rps >= 1.1 * better.rps,
      },
      { target: '≥ 0.9× 1 worker memory', pass: vsMemory >= 0.9 },
    ],
  });
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

/** The service on real backends: on one Redis, and behind Sentinels that fail over to a replica. */
interface RealRefresh {
  two: Server;
  behindSentinels: Server;
  behindCluster: Server;
}

async function compareRefresh(memory: Server, real: RealRefresh | undefined, nodeOauth: Server) {
  // A fresh pool for every slice: tokens in flight when a slice ends are spent but never answered.
  const grant = (server: Server, endpoints: TokenEndpoints) => async () => {
    const pool = await refreshTokenPool(endpoints);
    return withCpu(cpuGroups(server), () => refreshLoad(endpoints, pool));
  };
  // Issue 21: a refresh should cost what its signature costs, like a client_credentials token,
  // so each setup's refresh rate is paired with its client_credentials rate, on as many
  // connections as the refresh grant's.
  const credentials = (server: Server) => {
    const measure = clientCredentialsLoad(ours(server.url).token, FRONTEND_CLIENT, CONNECTIONS);
    return () => withCpu(cpuGroups(server), () => measure());
  };
  const measures: Record<string, () => Promise<Measurement>> = {
    memory: grant(memory, ours(memory.url)),
    memoryCredentials: credentials(memory),
    ...(real
      ? {
          real: grant(real.two, ours(real.two.url)),
          realCredentials: credentials(real.two),
          sentinel: grant(real.behindSentinels, ours(real.behindSentinels.url)),
          cluster: grant(real.behindCluster, ours(real.behindCluster.url)),
        }
      : {}),
    nodeOauth: grant(nodeOauth, peer(nodeOauth.url)),
  };
  // Warm-up of the two that have not run refreshes yet (the others ran their unpaired rows):
  // a cold service spends its first slice in the JIT and in opening connections.
  log('refresh grant: warm-up');
  for (const key of ['sentinel', 'cluster', 'nodeOauth']) await measures[key]?.();
  const m = await interleaved(
    real
      ? 'refresh grant: 1 worker memory, 2 workers real, 2 workers real behind Sentinels and in a Cluster, oauth2-server; client_credentials beside it'
      : 'refresh grant: 1 worker memory, oauth2-server; client_credentials beside it',
    measures,
  );
  const mem = measured(m, 'memory');
  const oauth2 = measured(m, 'nodeOauth');
  const name = 'refresh grant, paired';
  const credentialsName = `client_credentials (Basic, c=${CONNECTIONS}), paired with the refresh grant`;
  const memoryVsPeer = versusPeer(mem, oauth2, AHEAD_OF_PEER);
  const memoryCredentials = measured(m, 'memoryCredentials');
  const memoryVsCredentials = versusCredentials(mem, memoryCredentials);
  rows.push(
    { name: credentialsName, setup: '1 worker, memory', m: memoryCredentials },
    { name, setup: NODE_OAUTH, m: oauth2 },
    {
      name,
      setup: '1 worker, memory',
      m: mem,
      ratio: `${memoryVsPeer.ratio}; ${memoryVsCredentials.ratio}`,
      checks: [...memoryVsPeer.checks, memoryVsCredentials.check],
    },
  );
  if (!real) return;
  const versusMemory = (
    setup: string,
    measurement: Measurement,
    credentials?: Measurement,
    target = 0.7,
  ): Row => {
    const ratio = measurement.rps / mem.rps;
    const vsCredentials = credentials && versusCredentials(measurement, credentials);
    return {
      name,
      setup,
      m: measurement,
      ratio: `${ratio.toFixed(2)}× 1 worker memory${vsCredentials ? `; ${vsCredentials.ratio}` : ''}`,
      checks: [
        { target: `≥ ${target}× 1 worker memory`, pass: ratio >= target },
        ...(vsCredentials ? [vsCredentials.check] : []),
      ],
    };
  };
  const realCredentials = measured(m, 'realCredentials');
  rows.push(
    { name: credentialsName, setup: '2 workers, real', m: realCredentials },
    versusMemory('2 workers, real', measured(m, 'real'), realCredentials),
    versusMemory(
      '2 workers, real, Sentinel: 1 replica acknowledges each change',
      measured(m, 'sentinel'),
      undefined,
      0.75,
    ),
    versusMemory(
      '2 workers, real, Cluster of 3 shards: 1 replica of the shard acknowledges each change',
      measured(m, 'cluster'),
    ),
  );
}

/**
 * Slices of the password comparison: the peer checks passwords on its one thread, four at a
 * time, so a short slice may end before any of them does.
 */
const PASSWORD_SLICE = Math.max(SLICE * 2, 4);

/** The password grant: bcrypt at BCRYPT_COST is nearly all of it, on either side. */
async function comparePassword(memory: Server, nodeOauth: Server) {
  const grant = (server: Server, endpoints: TokenEndpoints) => () =>
    withCpu(cpuGroups(server), () => passwordLoad(endpoints, { connections: 4, seconds: PASSWORD_SLICE }));
  const m = await interleaved('password grant: 1 worker memory, oauth2-server', {
    memory: grant(memory, ours(memory.url)),
    nodeOauth: grant(nodeOauth, peer(nodeOauth.url)),
  });
  const name = 'password grant (c=4), paired';
  const memoryVsPeer = versusPeer(m.memory, m.nodeOauth, { cpu: 1 });
  rows.push(
    { name, setup: NODE_OAUTH, m: m.nodeOauth },
    { name, setup: '1 worker, memory', m: m.memory, ...memoryVsPeer },
  );
}

async function reportSessionMemory(mongoUrl: string): Promise<void> {
  const memory = await measureSessionMemory(mongoUrl);
  const setup = `${memory.sessions} sessions, 2 workers, real (${memory.failures} failed)`;
  rows.push(
    {
      name: `Redis used_memory per session after ${REFRESHES} refreshes each, within the retry window`,
      setup,
      figure: `${memory.perSessionInWindow.toFixed(0)} B`,
      checks: [{ target: '≤ 1.2 KB', pass: memory.perSessionInWindow <= 1200 }],
    },
    {
      name: `Redis used_memory per session after ${REFRESHES} refreshes each, the window passed`,
      setup,
      figure: `${memory.perSession.toFixed(0)} B`,
      checks: [{ target: '≤ 600 B', pass: memory.perSession <= 600 }],
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

/** The unpaired rows of 1 worker on memory stores, the raw rates and reads during logins. */
async function measureMemoryAlone(memory: ServiceProcess) {
  const bare = await startBare();
  await load(bare.url, { seconds: 1 });
  const mem = await measureService('1 worker, memory', memory, bare);
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
  const readRate = { rps: 200, p50: 0, p99: 0, failures: 0, ok: 0 };
  const underLogins = await interleaved('GET /users/{id} at 200/s alone and during password grants', {
    alone: () => rate(readRate),
    during: async () => {
      const [reads] = await Promise.all([rate(readRate), passwordLoad(ours(memory.url), { connections: 8 })]);
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

  await bare.stop();
  return mem.reads;
}

async function main(): Promise<void> {
  // Anything else running on these cores shows up in every number below.
  log(
    `${CORES} cores (${CPU_MODEL}), Node ${process.version}, ${ROUNDS} × ${SLICE} s slices, ${CONNECTIONS} connections`,
  );

  // 1 worker, memory stores: measured alone first, and kept running for the comparisons.
  const memory = await startService({});
  const memoryReads = runs('service')
    ? await measureMemoryAlone(memory)
    : runs('reads')
      ? await prepareReads(memory.url)
      : undefined;
  // Real backends: 1 worker, then 2 workers, over the same private servers.
  const missing = ['redis-server', 'ferretdb'].filter((binary) => !onPath(binary));
  let real:
    | { one: Measured; two: Measured; behindSentinels: Server; behindCluster: Server; mongoUrl: string }
    | undefined;
  if (!withRealBackends) {
    log(`memory stores only: sections ${[...only].join(', ')}`);
  } else if (missing.length > 0) {
    log(`skipping the real-backend runs: ${missing.join(' and ')} not on PATH`);
  } else {
    const [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    stopLater(() => ferret.dispose());
    stopLater(() => redis.dispose());
    const backends = { MONGODB_URL: withDatabase(ferret.url, uniqueName('bench')), REDIS_URL: redis.url };
    const one = await startService({ ...backends, WORKERS: '1' });
    const two = await startService({ ...backends, WORKERS: '2' });
    let [reads1, reads2] = [undefined as Reads | undefined, undefined as Reads | undefined];
    if (runs('service')) {
      const bare = await startBare();
      await load(bare.url, { seconds: 1 });
      reads1 = (await measureService('1 worker, real', one, bare)).reads;
      reads2 = (await measureService('2 workers, real', two, bare)).reads;
      await bare.stop();
    }
    // The production shape with replicas: REDIS_MIN_REPLICA_ACKS is 1 behind Sentinels.
    const sentinels = await startSentinelSetup();
    stopLater(() => sentinels.dispose());
    const behindSentinels = await startService({
      MONGODB_URL: withDatabase(ferret.url, uniqueName('bench_sentinel')),
      REDIS_URL: sentinels.url,
      WORKERS: '2',
    });
    // And in a Cluster, where REDIS_MIN_REPLICA_ACKS is 1 too: a replica of each change's shard.
    const cluster = await startClusterSetup();
    stopLater(() => cluster.dispose());
    const behindCluster = await startService({
      MONGODB_URL: withDatabase(ferret.url, uniqueName('bench_cluster')),
      REDIS_URL: cluster.url,
      WORKERS: '2',
    });
    real = {
      one: { server: one, reads: reads1 ?? (await prepareReads(one.url)) },
      two: { server: two, reads: reads2 ?? (await prepareReads(two.url)) },
      behindSentinels,
      behindCluster,
      mongoUrl: ferret.url,
    };
  }
  const nodeOauth = await startPeer('oauth2-server');
  if (runs('cc')) await compareClientCredentials(memory, real?.two.server, nodeOauth);
  if (real && memoryReads && runs('reads')) {
    await compareReads({ server: memory, reads: memoryReads }, real.one, real.two);
  }
  if (runs('refresh')) {
    await compareRefresh(
      memory,
      real && {
        two: real.two.server,
        behindSentinels: real.behindSentinels,
        behindCluster: real.behindCluster,
      },
      nodeOauth,
    );
  }
  if (runs('password')) await comparePassword(memory, nodeOauth);
  await Promise.all([
    nodeOauth.stop(),
    memory.stop(),
    real?.one.server.stop(),
    real?.two.server.stop(),
    real?.behindSentinels.stop(),
    real?.behindCluster.stop(),
  ]);
  if (real && runs('sessions')) await reportSessionMemory(real.mongoUrl);
  // The account listings over 100,000 users, on memory and FerretDB (bench/search.ts).
  if (runs('listings')) rows.push(...(await measureListings()));
  // An avatar upload's cost, and GET / beside 20 concurrent 1 MB uploads (bench/avatars.ts).
  if (runs('avatars')) rows.push(...(await measureAvatars()));
  printTable();
}

function printTable(stopped = false): void {
  const seconds = Math.round((Date.now() - RUN_STARTED) / 1000);
  const fmt = (value: number) => value.toFixed(0);
  // autocannon records latency in whole milliseconds.
  const ms = (value: number | undefined) => (value === undefined ? '' : value < 1 ? '<1' : value.toFixed(0));
  const lines = [
    `Bench${stopped ? ' (stopped at its time limit: the rows measured until then)' : ''}: ${CORES} cores (${CPU_MODEL}), Node ${process.version}, loopback; each figure the median of ${ROUNDS} ` +
      `interleaved ${SLICE} s slices; ${CONNECTIONS} connections (password grant 4, client_credentials ` +
      `${CLIENT_CREDENTIALS_CONNECTIONS}); BCRYPT_COST ${BCRYPT_COST}; total ${seconds} s; ` +
      `1-min load average before the run ${LOAD_BEFORE.toFixed(2)}`,
    '',
    '| scenario | setup | req/s | p50 ms | p99 ms | failed | server CPU ms per request (token) | ratio | target | result | CPU cores: load generator / server / FerretDB / Redis |',
    '|---|---|---:|---:|---:|---:|---:|---|---|---|---|',
    ...rows.map((row) =>
      [
        '',
        row.name,
        row.setup,
        row.m ? fmt(row.m.rps) : (row.figure ?? ''),
        ms(row.m?.p50),
        ms(row.m?.p99),
        row.m ? String(row.m.failures) : '',
        row.m?.serverMsPerRequest === undefined ? '' : row.m.serverMsPerRequest.toFixed(3),
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
  printTable(true);
  void stopAll().finally(() => process.exit(1));
}, TIME_LIMIT_MS).unref();

try {
  await main();
} finally {
  await stopAll();
}
