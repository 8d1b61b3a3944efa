/**
 * The service over Redis in its highly available shapes: Sentinel and Cluster from the URLs
 * .ci/run exports, and a Sentinel failover under refresh load on a setup of its own.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { runCli } from '../cli/run-cli.ts';
import {
  type Backend,
  realServersMissing,
  type SentinelSetup,
  startFerretDb,
  startSentinelSetup,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import {
  passwordGrant,
  privateServiceEnv,
  readOwnAccount,
  refreshGrant,
  type ServiceProcess,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

const skip = realServersMissing('Redis shape tests');
let ferret: Backend;
const roots: string[] = [];
const services: ServiceProcess[] = [];

before(async () => {
  if (!skip) ferret = await startFerretDb();
});

after(async () => {
  await Promise.all(services.map((service) => service.stop()));
  await ferret?.dispose();
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});

async function startService(redisUrl: string): Promise<ServiceProcess> {
  const root = await mkdtemp(join(tmpdir(), 'shapes-'));
  roots.push(root);
  const service = spawnService({
    cwd: root,
    env: {
      ...(await privateServiceEnv(root)),
      WORKERS: '2',
      MONGODB_URL: withDatabase(ferret.url, uniqueName('shapes')),
      REDIS_URL: redisUrl,
    },
  });
  services.push(service);
  await waitForHttp(service.url, { service });
  return service;
}

for (const [shape, url] of [
  ['Sentinel', process.env.REDIS_SENTINEL_URL],
  ['Cluster', process.env.REDIS_CLUSTER_URL],
] as const) {
  describe(`the service over Redis ${shape}`, {
    skip: skip || (url ? false : `no URL for Redis ${shape} (REDIS_${shape.toUpperCase()}_URL): not run`),
  }, () => {
    test('a command that writes, run with this REDIS_URL, does its work and exits', async () => {
      const root = await mkdtemp(join(tmpdir(), 'shapes-cli-'));
      roots.push(root);
      const env = {
        MONGODB_URL: withDatabase(ferret.url, uniqueName('shapes_cli')),
        REDIS_URL: url ?? '',
        BCRYPT_COST: '4',
      };
      for (const args of [['seed'], ['client:rotate-secret', 'frontend', '--overlap', '60']]) {
        const result = await runCli(args, { cwd: root, env, timeoutMs: 20_000 });
        assert.equal(result.code, 0, result.stderr);
      }
    });

    test('signs in, reads, refreshes, answers a retry with the same successor, and revokes a family whose older token comes back', async () => {
      const service = await startService(url ?? '');
      const login = await passwordGrant(service.url);
      assert.equal(login.status, 200, login.text);
      const first = login.json();
      assert.equal((await readOwnAccount(service.url, String(first.access_token))).status, 200);
      const tokens = [String(first.refresh_token)];
      for (let i = 0; i < 5; i++) {
        const refreshed = await refreshGrant(service.url, tokens[i] ?? '');
        assert.equal(refreshed.status, 200, refreshed.text);
        tokens.push(String(refreshed.json().refresh_token));
      }
      const [older, previous, current] = tokens.slice(-3);
      const retried = await refreshGrant(service.url, previous ?? '');
      assert.equal(retried.json().refresh_token, current, 'a retry gets the same successor');
      assert.equal((await refreshGrant(service.url, older ?? '')).json().error, 'invalid_grant');
      assert.equal(
        (await refreshGrant(service.url, current ?? '')).json().error,
        'invalid_grant',
        'family revoked',
      );
      assert.ok(!service.lines.some((line) => /"level":50|Unexpected/.test(line)), service.lines.join('\n'));
    });
  });
}

describe('a Sentinel failover under refresh load', { skip }, () => {
  let setup: SentinelSetup;
  before(async () => {
    if (!skip) setup = await startSentinelSetup();
  });
  after(() => setup?.dispose());

  test('answers 503 only until a replica confirms writes on the new master, then as before; no answered rotation is lost', async (t) => {
    const service = await startService(setup.url);
    const sessions = async (count: number) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const login = await passwordGrant(service.url);
          assert.equal(login.status, 200, login.text);
          return String(login.json().refresh_token);
        }),
      );
    // Each sign-in was confirmed by the replica before it was answered (REDIS_MIN_REPLICA_ACKS).
    const kept = await sessions(10);

    const loaded = await sessions(8);
    const statuses: number[] = [];
    const last = loaded.map(() => 0);
    let failedAt = 0;
    let recoveredAt = 0;
    let running = true;
    const startedAt = Date.now();
    const clients = loaded.map(async (initial, index) => {
      let token = initial;
      while (running) {
        const response = await refreshGrant(service.url, token);
        statuses.push(response.status);
        last[index] = response.status;
        if (response.status === 200) {
          token = String(response.json().refresh_token);
          if (failedAt && !recoveredAt) recoveredAt = Date.now();
        } else if (response.status === 503) {
          // A standard client: the same token again, a moment later.
          failedAt ||= Date.now();
          recoveredAt = 0;
          await new Promise((resolve) => setTimeout(resolve, 50));
        } else {
          break;
        }
      }
      return token;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const oldMaster = await setup.masterPort();
    const failoverAt = Date.now();
    await setup.failover();
    for (let i = 0; i < 100 && (await setup.masterPort()) === oldMaster; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const promotedAt = Date.now();
    // The load runs on until the Sentinels have demoted the old master (some seconds after the
    // promotion; a write it took meanwhile and answered would be lost now), and until every
    // client is answered 200 again: the new master confirms writes once the old one follows it.
    const deadline = Date.now() + 30_000;
    const oldPrimary = new Redis(setup.primary.url);
    try {
      while (Date.now() < deadline && !(await oldPrimary.info('replication')).includes('role:slave'))
        await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      oldPrimary.disconnect();
    }
    const demotedAt = Date.now();
    while (Date.now() < deadline && (Date.now() - demotedAt < 1000 || !last.every((s) => s === 200)))
      await new Promise((resolve) => setTimeout(resolve, 100));
    running = false;
    const tokens = await Promise.all(clients);

    const unexpected = statuses.filter((status) => status !== 200 && status !== 503);
    assert.deepEqual(unexpected, [], 'only 200 and 503');
    assert.deepEqual(
      last,
      loaded.map(() => 200),
      'normal again at the end',
    );
    for (const token of [...tokens, ...kept]) {
      const refreshed = await refreshGrant(service.url, token);
      assert.equal(refreshed.status, 200, `an answered session survives the failover: ${refreshed.text}`);
    }
    const failures = statuses.filter((status) => status === 503).length;
    t.diagnostic(
      `failover: ${statuses.length} refreshes in ${Date.now() - startedAt} ms, ${failures} answered 503; ` +
        `Sentinel named the new master ${promotedAt - failoverAt} ms after SENTINEL FAILOVER ` +
        `and demoted the old one ${demotedAt - failoverAt} ms after it; ` +
        (failedAt
          ? `503s from ${failedAt - failoverAt} ms to ${recoveredAt - failoverAt} ms after it`
          : 'no 503'),
    );
  });
});
