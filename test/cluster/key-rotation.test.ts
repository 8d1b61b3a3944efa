/**
 * Key rotation on running services, as an operator does it: two nodes on one key directory
 * (a 2-worker cluster and a second node) over real Redis and FerretDB, `keys:rotate` and
 * `keys:retire` run from the command line, and no service restarted.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../cli/run-cli.ts';
import {
  type Backend,
  freePort,
  realServersMissing,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import { decodeJwtPart } from '../support/http.ts';
import {
  passwordGrant,
  readOwnAccount,
  refreshGrant,
  type ServiceProcess,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

const skip = realServersMissing('key rotation across nodes');

type Tokens = { access_token: string; refresh_token: string };

/** Requests on new connections spread over the workers; this many reach both with near certainty. */
const READS_PER_NODE = 16;

describe('key rotation across workers and nodes', { skip }, () => {
  let root: string;
  let keysDir: string;
  let redis: Backend;
  let ferret: Backend;
  let cluster: ServiceProcess;
  let second: ServiceProcess;
  let nodes: ServiceProcess[];

  async function startNode(workers: number, backends: Record<string, string>): Promise<ServiceProcess> {
    const service = spawnService({
      cwd: root,
      env: {
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        WORKERS: String(workers),
        KEYS_DIR: keysDir,
        LOG_DIR: join(root, 'log'),
        BCRYPT_COST: '4',
        ...backends,
      },
    });
    await waitForHttp(service.url, { service });
    await service.waitForRecord((record) =>
      String(record.msg).startsWith(`All ${workers} worker(s) serving`),
    );
    return service;
  }

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'rotation-'));
    keysDir = join(root, 'keys');
    [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    const backends = { MONGODB_URL: withDatabase(ferret.url, uniqueName('rotation')), REDIS_URL: redis.url };
    cluster = await startNode(2, backends);
    second = await startNode(1, backends);
    nodes = [cluster, second];
  });

  after(async () => {
    await Promise.all([cluster?.stop(), second?.stop()]);
    await Promise.all([redis?.dispose(), ferret?.dispose()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The statuses of READS_PER_NODE authenticated reads on every node. */
  async function statuses(accessToken: string): Promise<number[]> {
    const reads = nodes.flatMap((node) =>
      Array.from({ length: READS_PER_NODE }, () => readOwnAccount(node.url, accessToken)),
    );
    return (await Promise.all(reads)).map((response) => response.status);
  }

  const keysCli = async (...args: string[]) => {
    const result = await runCli([...args, '--dir', keysDir], { cwd: root });
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };

  test('a token from before keys:rotate works everywhere after it; new tokens carry the new kid; keys:retire refuses the old', async () => {
    const pids = nodes.map((node) => [node.pid, ...node.workerPids()]);
    const before = (await passwordGrant(cluster.url)).json() as Tokens;
    const oldKid = decodeJwtPart(before.access_token, 0).kid;
    assert.ok((await statuses(before.access_token)).every((status) => status === 200));

    await keysCli('keys:rotate');
    const newKid = /signing +(\S+) +signs/.exec(await keysCli('keys:list'))?.[1];
    assert.ok(newKid && newKid !== oldKid);
    for (const node of nodes) {
      await eventually(async () => {
        const grants = await Promise.all(
          Array.from({ length: 4 }, async () => (await passwordGrant(node.url)).json() as Tokens),
        );
        return grants.every((tokens) => decodeJwtPart(tokens.access_token, 0).kid === newKid);
      }, `every worker of ${node.url} signs with the new key`);
    }
    assert.deepEqual(await statuses(before.access_token), Array(2 * READS_PER_NODE).fill(200));
    const after = (await passwordGrant(second.url)).json() as Tokens;
    assert.deepEqual(await statuses(after.access_token), Array(2 * READS_PER_NODE).fill(200));
    const refreshed = await refreshGrant(cluster.url, before.refresh_token);
    assert.equal(refreshed.status, 200, `a refresh token from before the rotation: ${refreshed.text}`);
    assert.equal(decodeJwtPart((refreshed.json() as Tokens).access_token, 0).kid, newKid);

    await keysCli('keys:retire', '--all');
    await eventually(
      async () => (await statuses(before.access_token)).every((status) => status === 401),
      'every worker of every node refuses the retired key',
    );
    assert.deepEqual(await statuses(after.access_token), Array(2 * READS_PER_NODE).fill(200));
    assert.deepEqual(
      nodes.map((node) => [node.pid, ...node.workerPids()]),
      pids,
      'no process was restarted',
    );
  });
});
