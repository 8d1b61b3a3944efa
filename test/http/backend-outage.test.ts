import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, storeAccount } from '../accounts/fixtures.ts';
import {
  authorizationQuery,
  csrfTokenOf,
  openAuthorization,
  pkce,
  postSignIn,
  redirectParameters,
  registerClient,
  superuserToken,
} from '../support/authorization.ts';
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
import {
  decodeJwtPart,
  FRONTEND_CLIENT,
  passwordGrant,
  refreshGrant,
  request,
  SEEDED_USER,
} from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const skip = realServersMissing('backend outage suite');

describe('backend outage and recovery, through HTTP', { skip }, () => {
  let redis: Backend;
  let mongo: Backend;
  let server: TestServer;
  let accessToken: string;
  let userPath: string;

  before(async () => {
    [redis, mongo] = await Promise.all([startRedis(), startFerretDb()]);
    server = await startTestServer({
      env: { MONGODB_URL: withDatabase(mongo.url, uniqueName('outage')), REDIS_URL: redis.url },
    });
    accessToken = (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).access_token;
    userPath = `/users/${decodeJwtPart(accessToken, 1).sub}`;
  });
  after(async () => {
    await server?.close();
    await Promise.all([redis?.dispose(), mongo?.dispose()]);
  });

  test('Redis down: token requests get a quick 503 problem, reads and GET / keep working; then it recovers', async () => {
    const { refresh_token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
    await redis.stop();
    const started = Date.now();
    const refresh = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
    assert.equal(refresh.status, 503);
    assert.equal(refresh.headers.get('content-type'), 'application/json');
    assert.equal(refresh.body.error, 'temporarily_unavailable');
    assert.match(String(refresh.body.detail), /Redis/);
    assert.ok(!JSON.stringify(refresh.body).includes('    at '), 'no driver stack');
    assert.ok(Date.now() - started < 5000, 'no hang');
    assert.equal((await request(server.url, 'GET', '/')).status, 200);
    assert.equal((await request(server.url, 'GET', userPath, { token: accessToken })).status, 200);

    await redis.restart();
    await eventually(
      async () =>
        (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER).catch(() => null))?.token_type ===
        'Bearer',
      'a login after Redis came back',
      20_000,
    );
  });

  test('MongoDB down: account reads and logins get a quick 503, GET / keeps working; then it recovers', async () => {
    await mongo.stop();
    const started = Date.now();
    const read = await request(server.url, 'GET', userPath, { token: accessToken });
    assert.equal(read.status, 503);
    assert.match(String(read.body.detail), /MongoDB/);
    const login = await request(server.url, 'POST', '/security/generate-token', {
      json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
    });
    assert.equal(login.status, 503);
    assert.ok(Date.now() - started < 10_000, 'no hang');
    assert.equal((await request(server.url, 'GET', '/')).status, 200);

    await mongo.restart();
    await eventually(
      async () => (await request(server.url, 'GET', userPath, { token: accessToken })).status === 200,
      'an account read after MongoDB came back',
      20_000,
    );
  });
});

describe('an outage while signing in on the sign-in page', { skip }, () => {
  let redis: Backend;
  let mongo: Backend;
  let server: TestServer;
  let clientName: string;
  const user = { username: `${randomUUID()}@example.com`, password: PASSWORD };

  before(async () => {
    [redis, mongo] = await Promise.all([startRedis(), startFerretDb()]);
    server = await startTestServer({
      env: { MONGODB_URL: withDatabase(mongo.url, uniqueName('sign-in')), REDIS_URL: redis.url },
    });
    clientName = (
      await registerClient(server.url, await superuserToken(server.url), {
        name: 'outage-app',
        type: 'public',
      })
    ).name;
    await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
      identity: user.username,
    });
  });
  after(async () => {
    await server?.close();
    await Promise.all([redis?.dispose(), mongo?.dispose()]);
  });

  for (const backend of ['MongoDB', 'Redis'] as const) {
    test(`${backend} down: the post is a 503 page, and the same form signs in once it is back`, async () => {
      const page = await openAuthorization(server.url, authorizationQuery(clientName, pkce().challenge));
      assert.equal(page.status, 200, page.html);
      const form = { csrf_token: csrfTokenOf(page.html), ...user };
      const down = backend === 'MongoDB' ? mongo : redis;
      await down.stop();
      const failed = await postSignIn(server.url, form);
      assert.equal(failed.status, 503, failed.html);
      assert.match(failed.html, /not available right now/);
      await down.restart();
      // Posted again (as a person would press the button again) until the backend answers.
      let retried = failed;
      await eventually(
        async () => {
          retried = await postSignIn(server.url, form);
          return retried.status !== 503;
        },
        `a sign-in after ${backend} came back`,
        20_000,
      );
      assert.equal(retried.status, 303, retried.html);
      assert.ok(redirectParameters(retried.location).get('code'));
    });
  }
});

describe('backends unreachable at start', () => {
  test('the service retries for BACKEND_STARTUP_TIMEOUT, then exits 1 naming the backend', async () => {
    const [mongoPort, redisPort, port] = await Promise.all([freePort(), freePort(), freePort()]);
    const root = mkdtempSync(join(tmpdir(), 'unreachable-'));
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        KEYS_DIR: join(root, 'keys'),
        LOG_DIR: join(root, 'log'),
        MONGODB_URL: `mongodb://user:s3cret@127.0.0.1:${mongoPort}/app`,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        BACKEND_STARTUP_TIMEOUT: '2',
        WORKERS: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 1);
    assert.match(output, /MongoDB at 127\.0\.0\.1:\d+ is unreachable/);
    assert.ok(!output.includes('s3cret'), 'the password is never printed');
  });
});
