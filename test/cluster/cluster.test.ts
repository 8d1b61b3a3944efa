/**
 * The service as an operator runs it: `node src/main.ts` with WORKERS=2 over real Redis and
 * FerretDB (a MongoDB-compatible server), started privately on free loopback ports.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Backend,
  realServersMissing,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import {
  passwordGrant,
  privateServiceEnv,
  readOwnAccount,
  refreshGrant,
  type ServiceProcess,
  send,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

const skip = realServersMissing('cluster tests');

let redis: Backend;
let ferret: Backend;
const roots: string[] = [];

before(async () => {
  if (skip) return;
  [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
});

after(async () => {
  await Promise.all([redis?.dispose(), ferret?.dispose()]);
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});

/** A two-worker service over the real backends, in a database of its own. */
async function startCluster(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const root = await mkdtemp(join(tmpdir(), 'cluster-'));
  roots.push(root);
  const service = spawnService({
    cwd: root,
    env: {
      ...(await privateServiceEnv(root)),
      WORKERS: '2',
      SHUTDOWN_GRACE: '10',
      MONGODB_URL: withDatabase(ferret.url, uniqueName('cluster')),
      REDIS_URL: redis.url,
      ...env,
    },
  });
  await waitForHttp(service.url, { service });
  await service.waitForRecord((record) => String(record.msg).startsWith('All 2 worker(s) serving'));
  return service;
}

interface Outcome {
  startedAt: number;
  endedAt: number;
  status: number | string;
}

/** `clients` loops of authenticated reads, each on a new connection, until `until()` says stop. */
async function readLoad(url: string, accessToken: string, clients: number, until: () => boolean) {
  const outcomes: Outcome[] = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!until()) {
        const startedAt = Date.now();
        let status: number | string;
        try {
          status = (await readOwnAccount(url, accessToken)).status;
        } catch (error) {
          status = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        }
        outcomes.push({ startedAt, endedAt: Date.now(), status });
      }
    }),
  );
  return outcomes;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a cluster of two workers over real MongoDB and Redis', { skip }, () => {
  let service: ServiceProcess;
  before(async () => {
    service = await startCluster();
  });
  after(async () => {
    await service?.stop();
  });

  test('forks WORKERS workers', () => {
    assert.equal(service.workerPids().length, 2);
  });

  test('tokens issued and refreshed many times in a row are accepted by whichever worker serves the request', async () => {
    // Every request opens its own connection and the primary deals connections to the
    // workers in turn, so consecutive requests land on alternating workers.
    const first = await passwordGrant(service.url);
    assert.equal(first.status, 200, first.text);
    let tokens = first.json() as { access_token: string; refresh_token: string };
    for (let round = 0; round < 30; round++) {
      const read = await readOwnAccount(service.url, tokens.access_token);
      assert.equal(read.status, 200, `read ${round}: ${read.text}`);
      const refreshed = await refreshGrant(service.url, tokens.refresh_token);
      assert.equal(refreshed.status, 200, `refresh ${round}: ${refreshed.text}`);
      tokens = refreshed.json() as typeof tokens;
    }
    const reads = await Promise.all(
      Array.from({ length: 20 }, () => readOwnAccount(service.url, tokens.access_token)),
    );
    assert.deepEqual(
      reads.map((read) => read.status),
      reads.map(() => 200),
    );
  });

  test('a worker killed under load is replaced while the other one keeps serving', async () => {
    const tokens = (await passwordGrant(service.url)).json() as { access_token: string };
    const before = service.workerPids();
    const [victim] = before;
    assert.ok(victim);
    let done = false;
    const load = readLoad(service.url, tokens.access_token, 4, () => done);
    await sleep(500);
    const killedAt = Date.now();
    process.kill(victim, 'SIGKILL');
    await service.waitForRecord((record) => String(record.msg).includes('replaced the one that died'));
    const replacedAt = Date.now();
    const after = service.workerPids();
    await sleep(1_000);
    done = true;
    const outcomes = await load;

    assert.equal(after.length, 2);
    assert.ok(!after.includes(victim), 'the killed worker is gone');
    assert.equal(after.filter((pid) => !before.includes(pid)).length, 1, 'one new worker took its place');

    const failed = outcomes.filter((outcome) => outcome.status !== 200);
    const duringGap = outcomes.filter((o) => o.startedAt >= killedAt && o.endedAt <= replacedAt);
    const afterReplacement = outcomes.filter((o) => o.startedAt >= replacedAt);
    console.log(
      `# ${outcomes.length} reads; ${failed.length} failed (${failed.map((o) => o.status).join(', ') || 'none'}); ` +
        `${duringGap.filter((o) => o.status === 200).length} succeeded while one worker was down; ` +
        `replacement after ${replacedAt - killedAt} ms`,
    );
    // Only what the killed worker held when it died can fail: the request each client had in
    // flight there, and (each worker has its own SO_REUSEPORT socket) a connection already
    // queued on the dying socket before the kernel stopped routing to it. So at most two per
    // client, all started around the moment of death.
    assert.ok(failed.length <= 8, `at most two requests per client fail, got ${failed.length}`);
    assert.ok(
      failed.every((o) => o.startedAt <= killedAt + 250),
      'only requests under way as the worker died failed',
    );
    // A connection the dead worker held is reset at once, not left hanging until a timeout.
    assert.ok(
      failed.every((o) => o.endedAt - o.startedAt < 5_000),
      'no request hung on the dead worker',
    );
    // The surviving worker kept serving during the gap.
    assert.ok(
      duringGap.some((o) => o.status === 200),
      'the other worker served while one was down',
    );
    assert.ok(afterReplacement.length > 0);
    assert.ok(
      afterReplacement.every((o) => o.status === 200),
      'every request after the replacement succeeded',
    );
  });
});

describe('stopping a cluster', { skip }, () => {
  test('SIGTERM lets in-flight requests finish, then the process exits 0', async () => {
    // Cost 10 makes each password grant take a noticeable while (tens of ms of bcrypt each,
    // queued on one hashing thread per worker), so they are still running when SIGTERM comes.
    const service = await startCluster({ BCRYPT_COST: '10' });
    const inFlight = Array.from({ length: 8 }, () => passwordGrant(service.url));
    await sleep(100);
    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    const results = await Promise.all(inFlight);
    const finishedAt = Date.now();
    const exit = await service.exited;
    console.log(`# last grant answered ${finishedAt - signalledAt} ms after SIGTERM`);
    assert.deepEqual(
      results.map((result) => result.status),
      results.map(() => 200),
    );
    assert.deepEqual(exit, { code: 0, signal: null });
    await assert.rejects(send(service.url, { timeoutMs: 2_000 }), 'no longer accepting connections');
    assert.ok(service.records().some((record) => record.msg === 'Stopped (exit code 0)'));
  });

  test('idle keep-alive connections do not hold up the stop', async () => {
    const service = await startCluster();
    // fetch keeps its connections open for reuse after each response.
    for (let i = 0; i < 4; i++) assert.equal((await fetch(`${service.url}/`)).status, 200);
    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    assert.deepEqual(await service.exited, { code: 0, signal: null });
    const took = Date.now() - signalledAt;
    assert.ok(took < 3_000, `stopped in ${took} ms, not after the 10 s grace period`);
  });
});
