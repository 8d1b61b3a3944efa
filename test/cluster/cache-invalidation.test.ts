/**
 * Two nodes over the same MongoDB and Redis, each with its own account and client caches: a
 * change made at one node is refused at the other within 100 ms, and a node that cannot hear
 * Redis never answers from its cache.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MongoClient } from 'mongodb';
import { isOneLineFailure, runCli } from '../cli/run-cli.ts';
import { superuserToken } from '../support/authorization.ts';
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
import { FRONTEND_CLIENT, request, SEEDED_USER } from '../support/http.ts';
import { type ServiceProcess, spawnService, waitForHttp } from '../support/processes.ts';

const skipReal = realServersMissing('cache invalidation across nodes');
const PROMISE_MS = 100;
const PASSWORD = 'correct horse battery';

describe('caches on two nodes', { skip: skipReal }, () => {
  let redis: Backend;
  let ferret: Backend;
  let root: string;
  let first: ServiceProcess;
  let second: ServiceProcess;
  let admin: string;
  let mongodbUrl: string;

  before(async () => {
    [redis, ferret] = await Promise.all([startRedis(), startFerretDb()]);
    root = await mkdtemp(join(tmpdir(), 'cache-nodes-'));
    mongodbUrl = withDatabase(ferret.url, uniqueName('cache'));
    const shared = {
      MONGODB_URL: mongodbUrl,
      REDIS_URL: redis.url,
      KEYS_DIR: join(root, 'keys'),
      WORKERS: '1',
      BCRYPT_COST: '4',
      HOST: '127.0.0.1',
    };
    const start = async (name: string) => {
      const cwd = join(root, name);
      const service = spawnService({
        cwd: root,
        env: { ...shared, PORT: String(await freePort()), LOG_DIR: join(cwd, 'log') },
      });
      await waitForHttp(service.url, { service });
      return service;
    };
    first = await start('a');
    second = await start('b');
    admin = await superuserToken(first.url);
  });

  after(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
    await Promise.all([redis?.dispose(), ferret?.dispose()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A fresh active user, signed in, whose account the second node has just read (and cached). */
  async function userCachedAtSecond(): Promise<{ id: string; token: string }> {
    const identity = `${uniqueName('u')}@example.com`;
    const created = await request(first.url, 'POST', '/users', {
      token: admin,
      json: { identity, password: PASSWORD, passwordConfirm: PASSWORD },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const login = await request(first.url, 'POST', '/security/generate-token', {
      json: {
        grant_type: 'password',
        scope: 'api',
        ...FRONTEND_CLIENT,
        username: identity,
        password: PASSWORD,
      },
    });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const user = { id: String(created.body.id), token: String(login.body.access_token) };
    for (let read = 0; read < 3; read++) assert.equal((await readAt(second, user)).status, 200);
    return user;
  }

  function readAt(node: ServiceProcess, user: { id: string; token: string }) {
    return request(node.url, 'GET', `/users/${user.id}`, { token: user.token });
  }

  /** Polls `refused` from the moment the change returned; the first refusal must come in time. */
  async function refusedWithinPromise(refused: () => Promise<boolean>): Promise<void> {
    const changed = performance.now();
    for (;;) {
      const sent = performance.now() - changed;
      if (await refused()) return;
      assert.ok(sent < PROMISE_MS, `still accepted ${Math.round(sent)} ms after the change returned`);
    }
  }

  for (const [change, write] of [
    ['deleted', (id: string) => request(first.url, 'DELETE', `/users/${id}`, { token: admin })],
    [
      'deactivated',
      (id: string) =>
        request(first.url, 'PATCH', `/users/${id}`, { token: admin, json: { status: 'inactive' } }),
    ],
    [
      'given a new password',
      (id: string) =>
        request(first.url, 'PATCH', `/users/${id}`, {
          token: admin,
          json: { password: 'another horse battery', passwordConfirm: 'another horse battery' },
        }),
    ],
  ] as const) {
    test(`a user ${change} at one node has its access token refused at the other within ${PROMISE_MS} ms`, async () => {
      const user = await userCachedAtSecond();
      const written = await write(user.id);
      assert.ok(written.status < 300, JSON.stringify(written.body));
      await refusedWithinPromise(async () => (await readAt(second, user)).status === 401);
    });
  }

  test(`a client secret rotated without overlap at one node is refused at the other within ${PROMISE_MS} ms`, async () => {
    const name = uniqueName('svc');
    const created = await request(first.url, 'POST', '/oauth-clients', {
      token: admin,
      json: { name, type: 'confidential', accounts: 'user', grants: ['client_credentials'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const secret = String(created.body.secret);
    const grant = (node: ServiceProcess) =>
      request(node.url, 'POST', '/security/generate-token', {
        json: { grant_type: 'client_credentials', scope: 'api', client_id: name, client_secret: secret },
      });
    for (let round = 0; round < 3; round++) assert.equal((await grant(second)).status, 200);
    const rotated = await request(first.url, 'PATCH', `/oauth-clients/${name}`, {
      token: admin,
      json: { rotateSecret: true, previousSecretOverlapSeconds: 0 },
    });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    await refusedWithinPromise(async () => (await grant(second)).status === 401);
  });

  test(`a secret the command line rotates works at every node within ${PROMISE_MS} ms, and the old one until it retires it`, async () => {
    const name = uniqueName('svc');
    const created = await request(first.url, 'POST', '/oauth-clients', {
      token: admin,
      json: { name, type: 'confidential', accounts: 'user', grants: ['client_credentials'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const grant = async (secret: string) =>
      (
        await request(second.url, 'POST', '/security/generate-token', {
          json: { grant_type: 'client_credentials', scope: 'api', client_id: name, client_secret: secret },
        })
      ).status;
    const old = String(created.body.secret);
    for (let round = 0; round < 3; round++) assert.equal(await grant(old), 200);
    const cli = (args: string[], env: Record<string, string> = { REDIS_URL: redis.url }) =>
      runCli(args, { cwd: root, env: { MONGODB_URL: mongodbUrl, BCRYPT_COST: '4', ...env } });

    const rotated = await cli(['client:rotate-secret', name, '--overlap', '600']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const renewed = String((JSON.parse(rotated.stdout) as { secret: string }).secret);
    await refusedWithinPromise(async () => (await grant(renewed)) === 200);
    assert.equal(await grant(old), 200, 'the old secret during the overlap');

    const unheard = await cli(['client:retire-secret', name], {});
    assert.ok(isOneLineFailure(unheard), JSON.stringify(unheard));
    assert.match(unheard.stderr, /REDIS_URL/);
    assert.equal(await grant(old), 200, 'the refused command changed nothing');

    const retired = await cli(['client:retire-secret', name]);
    assert.equal(retired.code, 0, retired.stderr);
    await refusedWithinPromise(async () => (await grant(old)) === 401);
    assert.equal(await grant(renewed), 200);
  });

  test(`a client the command line deletes is refused at every node within ${PROMISE_MS} ms: without REDIS_URL it refuses to`, async () => {
    const name = uniqueName('svc');
    const created = await request(first.url, 'POST', '/oauth-clients', {
      token: admin,
      json: { name, type: 'confidential', accounts: 'user', grants: ['client_credentials'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const grant = () =>
      request(second.url, 'POST', '/security/generate-token', {
        json: {
          grant_type: 'client_credentials',
          scope: 'api',
          client_id: name,
          client_secret: String(created.body.secret),
        },
      });
    for (let round = 0; round < 3; round++) assert.equal((await grant()).status, 200);

    // MONGODB_URL alone, as the docs allow for the command line: it would write unheard.
    const cli = (env: Record<string, string>) =>
      runCli(['client:delete', name], {
        cwd: root,
        env: { MONGODB_URL: mongodbUrl, BCRYPT_COST: '4', ...env },
      });
    const unheard = await cli({});
    assert.ok(isOneLineFailure(unheard), JSON.stringify(unheard));
    assert.match(unheard.stderr, /REDIS_URL/);
    assert.equal((await grant()).status, 200, 'the refused command changed nothing');

    const heard = await cli({ REDIS_URL: redis.url });
    assert.equal(heard.code, 0, heard.stderr);
    await refusedWithinPromise(async () => (await grant()).status === 401);
  });

  test('of the last two clients that sign administrators in, deleted at both nodes at once, one stays', async () => {
    const call = (node: ServiceProcess, method: string, path: string, json?: unknown) =>
      request(node.url, method, path, { token: admin, ...(json === undefined ? {} : { json }) });
    const adminGrants = { grants: ['password', 'refresh_token', 'client_credentials'] };
    try {
      for (let round = 0; round < 3; round++) {
        const names = [uniqueName('console'), uniqueName('console')];
        for (const name of names) {
          const created = await call(first, 'POST', '/oauth-clients', {
            name,
            type: 'confidential',
            accounts: 'admin',
            grants: ['password'],
          });
          assert.equal(created.status, 201, JSON.stringify(created.body));
        }
        // The seeded client keeps signing tokens' holders in, but no longer administrators.
        assert.equal(
          (await call(first, 'PATCH', '/oauth-clients/admin', { grants: ['client_credentials'] })).status,
          200,
        );
        const answers = await Promise.all([
          call(first, 'DELETE', `/oauth-clients/${names[0]}`),
          call(second, 'DELETE', `/oauth-clients/${names[1]}`),
        ]);
        assert.deepEqual(answers.map((answer) => answer.status).sort(), [204, 409], `round ${round}`);
        const left = await Promise.all(names.map((name) => call(first, 'GET', `/oauth-clients/${name}`)));
        assert.equal(left.filter((answer) => answer.status === 200).length, 1);
        assert.equal((await call(second, 'PATCH', '/oauth-clients/admin', adminGrants)).status, 200);
        for (const name of names) await call(first, 'DELETE', `/oauth-clients/${name}`);
      }
    } finally {
      await call(first, 'PATCH', '/oauth-clients/admin', adminGrants);
    }
  });

  test('while Redis is away, a node answers from MongoDB only: a change no message announced is never hidden', async () => {
    const user = await userCachedAtSecond();
    await redis.stop();
    const mongo = new MongoClient(mongodbUrl);
    try {
      // Written behind the service's back: no invalidation is ever published for it.
      await mongo
        .db()
        .collection('users')
        .updateOne({ _id: user.id } as object, { $set: { status: 'inactive' } });
      for (let read = 0; read < 5; read++) assert.equal((await readAt(second, user)).status, 401);
    } finally {
      await mongo.close();
      await redis.restart();
    }
    for (let read = 0; read < 5; read++) assert.equal((await readAt(second, user)).status, 401);
    // Each node reconnects on its own backoff (at most 2 s apart) and pings again.
    const loginAt = async (node: ServiceProcess) =>
      (
        await request(node.url, 'POST', '/security/generate-token', {
          json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
        })
      ).status === 200;
    await eventually(
      async () => (await loginAt(first)) && (await loginAt(second)),
      'both nodes signing in again after Redis came back',
    );
    // Once Redis is back the caches serve again, and invalidation with them.
    const next = await userCachedAtSecond();
    assert.equal((await request(first.url, 'DELETE', `/users/${next.id}`, { token: admin })).status, 204);
    await refusedWithinPromise(async () => (await readAt(second, next)).status === 401);
  });
});
