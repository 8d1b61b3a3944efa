/**
 * Several service instances ("nodes", each `node src/main.ts`) over the same MongoDB and Redis:
 * what they share is the key directory, and that alone decides whether they accept each
 * other's tokens. Also how the primary starts and gives up.
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Backend,
  freePort,
  realServersMissing,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { decodeJwtPart } from '../support/http.ts';
import {
  passwordGrant,
  readOwnAccount,
  refreshGrant,
  type ServiceProcess,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

const skipReal = realServersMissing('multi-node tests');

const roots: string[] = [];
const services: ServiceProcess[] = [];

after(async () => {
  await Promise.all(services.map((service) => service.stop()));
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  roots.push(root);
  return root;
}

/** Starts a node and waits until it answers; `ready: false` leaves waiting to the caller. */
async function startNode(env: Record<string, string>, options: { ready?: boolean } = {}) {
  const cwd = await tempDir('node-');
  const service = spawnService({
    cwd,
    env: {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      LOG_DIR: join(cwd, 'log'),
      BCRYPT_COST: '4',
      KEYS_DIR: join(cwd, 'keys'),
      ...env,
    },
  });
  services.push(service);
  if (options.ready !== false) await waitForHttp(service.url, { service });
  return service;
}

type Tokens = { access_token: string; refresh_token: string };

describe('nodes sharing MongoDB and Redis', { skip: skipReal }, () => {
  let redis: Backend;
  let ferret: Backend;
  let first: ServiceProcess;
  let second: ServiceProcess;
  let stranger: ServiceProcess;

  before(async () => {
    [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    const backends = { MONGODB_URL: withDatabase(ferret.url, uniqueName('nodes')), REDIS_URL: redis.url };
    const sharedKeys = join(await tempDir('keys-'), 'keys');
    // One worker each: the point here is the nodes, not the workers inside them.
    first = await startNode({ ...backends, WORKERS: '1', KEYS_DIR: sharedKeys });
    second = await startNode({ ...backends, WORKERS: '1', KEYS_DIR: sharedKeys });
    stranger = await startNode({ ...backends, WORKERS: '1' });
  });

  after(async () => {
    await Promise.all([first?.stop(), second?.stop(), stranger?.stop()]);
    await Promise.all([redis?.dispose(), ferret?.dispose()]);
  });

  test('a node accepts the access tokens another node with the same key files issued', async () => {
    const fromFirst = (await passwordGrant(first.url)).json() as Tokens;
    assert.equal((await readOwnAccount(second.url, fromFirst.access_token)).status, 200);
    const fromSecond = (await passwordGrant(second.url)).json() as Tokens;
    assert.equal((await readOwnAccount(first.url, fromSecond.access_token)).status, 200);
  });

  test('a refresh token issued by one node is redeemed at the other, and the new tokens work on both', async () => {
    const fromFirst = (await passwordGrant(first.url)).json() as Tokens;
    const refreshed = await refreshGrant(second.url, fromFirst.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);
    const tokens = refreshed.json() as Tokens;
    assert.equal((await readOwnAccount(first.url, tokens.access_token)).status, 200);
    assert.equal((await readOwnAccount(second.url, tokens.access_token)).status, 200);
    // Rotation is shared too: the first token, presented again at the first node, is answered
    // with the successor the second node made; once that is used, it is spent at the first.
    const retried = await refreshGrant(first.url, fromFirst.refresh_token);
    assert.equal(retried.status, 200, retried.text);
    assert.equal((retried.json() as Tokens).refresh_token, tokens.refresh_token);
    assert.equal((await refreshGrant(first.url, tokens.refresh_token)).status, 200);
    assert.equal((await refreshGrant(first.url, fromFirst.refresh_token)).status, 400);
  });

  test('a node with its own key files refuses those tokens', async () => {
    const tokens = (await passwordGrant(first.url)).json() as Tokens;
    const read = await readOwnAccount(stranger.url, tokens.access_token);
    assert.equal(read.status, 401);
    assert.match(String(read.headers['www-authenticate']), /invalid_token/);
    const refresh = await refreshGrant(stranger.url, tokens.refresh_token);
    assert.equal(refresh.status, 400);
    assert.equal(refresh.json().error, 'invalid_grant');
    // Its own tokens work for it, over the same account data.
    const own = (await passwordGrant(stranger.url)).json() as Tokens;
    assert.equal((await readOwnAccount(stranger.url, own.access_token)).status, 200);
  });
});

describe('starting and supervising', () => {
  test('nodes starting at once on an empty shared key directory generate one key set between them', async () => {
    const keysDir = join(await tempDir('race-'), 'keys');
    // Embedded stores: each node is self-contained; only the key directory is shared.
    const nodes = await Promise.all(Array.from({ length: 3 }, () => startNode({ KEYS_DIR: keysDir })));
    assert.deepEqual(readdirSync(keysDir), ['keyring-1.json']);
    const generated = nodes.filter((node) =>
      node.records().some((record) => String(record.msg).startsWith('Generated a new key ring')),
    );
    assert.equal(generated.length, 1, 'exactly one node generated the keys');
    const keyIds = await Promise.all(
      nodes.map(
        async (node) => decodeJwtPart(((await passwordGrant(node.url)).json() as Tokens).access_token, 0).kid,
      ),
    );
    assert.equal(new Set(keyIds).size, 1, 'every node signs with the same key');
    await Promise.all(nodes.map((node) => node.stop()));
  });

  test('a key directory open to others is tightened to 0700 at start, and the log says so', async () => {
    const keysDir = join(await tempDir('open-keys-'), 'keys');
    mkdirSync(keysDir);
    chmodSync(keysDir, 0o755);
    const node = await startNode({ KEYS_DIR: keysDir });
    assert.equal(statSync(keysDir).mode & 0o777, 0o700);
    assert.ok(
      node.records().some((record) => String(record.msg).includes(`${keysDir} from 0755 to 0700`)),
      node.lines.join('\n'),
    );
    await node.stop();
  });

  test('a key directory open to others that another user owns is left as it is, with a warning naming it', {
    skip: process.getuid?.() === 0 ? false : 'not run as root: cannot give a directory to another user',
  }, async () => {
    const keysDir = join(await tempDir('foreign-keys-'), 'keys');
    mkdirSync(keysDir);
    chmodSync(keysDir, 0o750);
    chownSync(keysDir, 65534, 65534);
    const node = await startNode({ KEYS_DIR: keysDir });
    assert.equal(statSync(keysDir).mode & 0o777, 0o750);
    const warning = node
      .records()
      .find((record) => record.level === 40 && String(record.msg).includes(keysDir));
    assert.ok(warning, node.lines.join('\n'));
    assert.match(String(warning.msg), /0750/);
    await node.stop();
  });

  test('without MONGODB_URL and REDIS_URL the service runs one worker and says why', async () => {
    const node = await startNode({ WORKERS: '4' });
    await node.waitForRecord((record) => String(record.msg).startsWith('All 1 worker(s) serving'));
    assert.equal(node.workerPids().length, 1);
    assert.ok(node.records().some((record) => String(record.msg).includes('running 1 worker, since memory')));
    await node.stop();
    assert.deepEqual(await node.exited, { code: 0, signal: null });
  });

  test('a port already in use stops the start with exit code 1 and a message naming the port', async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const node = await startNode({ PORT: String(port) }, { ready: false });
      assert.deepEqual(await node.exited, { code: 1, signal: null });
      assert.ok(node.lines.some((line) => line.includes(`port ${port} on 127.0.0.1 is already in use`)));
    } finally {
      blocker.close();
    }
  });

  test('workers dying in a loop make the primary give up with a clear message and exit code 1', async () => {
    const node = await startNode({});
    for (let crash = 1; crash <= 5; crash++) {
      await node.waitForRecord(
        (record) =>
          String(record.msg).startsWith('All 1 worker(s) serving') ||
          String(record.msg).includes('replaced the one that died'),
      );
      const [worker] = node.workerPids();
      assert.ok(worker, `a worker to kill (crash ${crash})`);
      process.kill(worker, 'SIGKILL');
      if (crash < 5) {
        const replaced = crash;
        await node.waitForRecord(
          () =>
            node.records().filter((r) => String(r.msg).includes('replaced the one that died')).length >=
            replaced,
        );
      }
    }
    assert.deepEqual(await node.exited, { code: 1, signal: null });
    const fatal = node.records().find((record) => record.level === 60);
    assert.match(String(fatal?.msg), /Workers died 5 times within 60 s .*crash loop, giving up/);
  });
});
