import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/config/config.ts';
import { configFile } from '../support/config-file.ts';
import { FRONTEND_CLIENT, passwordGrant, request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'permissions-policy': 'interest-cohort=()',
};

describe('HTTP pipeline', () => {
  let server: TestServer;
  let usersCalls = 0;
  before(async () => {
    server = await startTestServer({ env: { CORS_ORIGINS: 'https://app.example', BODY_LIMIT: '2kb' } });
  });
  after(() => server.close());

  test('GET / answers name and version with the deprecation headers, touching no store', async () => {
    const { users } = server.app.stores;
    const original = users.findById.bind(users);
    users.findById = async (id) => {
      usersCalls++;
      return original(id);
    };
    const response = await request(server.url, 'GET', '/', { token: 'ignored-on-a-public-route' });
    users.findById = original;
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { name: 'token-service', version: '1.0.0' });
    assert.equal(usersCalls, 0);
    assert.match(String(response.headers.get('deprecation')), /^@\d+$/);
    assert.match(String(response.headers.get('sunset')), /^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    assert.match(String(response.headers.get('link')), /rel="sunset"/);
    assert.equal(response.headers.get('cache-control'), null);
  });

  test('security headers are on every response, errors included', async () => {
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/nowhere'],
      ['DELETE', '/'],
      ['GET', '/users/x'],
    ] as const) {
      const response = await request(server.url, method, path);
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
        assert.equal(response.headers.get(name), value, `${name} on ${method} ${path}`);
      }
    }
  });

  test('an unknown path is 404 problem+json', async () => {
    const response = await request(server.url, 'GET', '/nowhere');
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(Object.keys(response.body).sort(), ['detail', 'status', 'title', 'type']);
  });

  test('a wrong method is 405 with Allow', async () => {
    const response = await request(server.url, 'PUT', '/security/generate-token');
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'POST');
    assert.equal(
      response.body.error,
      'invalid_request',
      'the token endpoint answers every error with an OAuth code',
    );
    const head = await request(server.url, 'HEAD', '/');
    assert.equal(head.status, 200);
    const deleteHome = await request(server.url, 'DELETE', '/');
    assert.equal(deleteHome.headers.get('allow'), 'GET, HEAD');
  });

  test('paths match regardless of case or a trailing slash; parameters arrive percent-decoded', async () => {
    const { access_token: token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
    const own = await request(server.url, 'GET', '/users/my-account', { token });
    assert.equal(own.status, 200);
    const id = String(own.body.id);
    // The first route of the table that matches wins: `my-account` is no id.
    for (const path of ['/USERS/My-Account', '/users/my-account/']) {
      assert.equal((await request(server.url, 'GET', path, { token })).body.id, id, path);
    }
    const escaped = `%${id.charCodeAt(0).toString(16)}${id.slice(1)}`;
    assert.equal((await request(server.url, 'GET', `/users/${escaped}`, { token })).body.id, id);
    // A malformed escape is an id like any other that names no account, never a 500.
    const malformed = await request(server.url, 'GET', '/users/%E0%A4%A', { token });
    assert.equal(malformed.status, 404);
  });

  test('a JSON answer says its length in bytes, not chunked, also for a body beyond ASCII', async () => {
    const { access_token: token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
    const renamed = await request(server.url, 'PATCH', '/users/my-account', {
      token,
      json: { firstName: 'Zoë', lastName: 'Müller-Łukasz' },
    });
    assert.equal(renamed.status, 200);
    for (const method of ['PATCH', 'GET'] as const) {
      const response = await fetch(`${server.url}/users/my-account`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(method === 'PATCH' ? { body: '{}' } : {}),
      });
      const bytes = Buffer.from(await response.arrayBuffer());
      assert.equal(response.status, 200, method);
      assert.equal(response.headers.get('transfer-encoding'), null, method);
      assert.equal(response.headers.get('content-length'), String(bytes.length), method);
      assert.equal(JSON.parse(bytes.toString('utf8')).lastName, 'Müller-Łukasz', method);
    }
  });

  test('malformed JSON is 400, a wrong content type 415, an oversized body 413', async () => {
    const malformed = await request(server.url, 'POST', '/account/register', {
      raw: '{"grant_type":',
      headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.detail, 'The request body is not valid JSON');
    const wrongType = await request(server.url, 'POST', '/account/register', {
      raw: 'grant_type=password',
      headers: { 'Content-Type': 'text/plain' },
    });
    assert.equal(wrongType.status, 415);
    const oversized = await request(server.url, 'POST', '/account/register', {
      json: { grant_type: 'password', padding: 'x'.repeat(4096) },
    });
    assert.equal(oversized.status, 413);
    for (const response of [malformed, wrongType, oversized]) {
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.ok(!JSON.stringify(response.body).includes(' at '), 'no stack trace');
    }
  });

  test('a JSON body that is not an object is invalid_request', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', { json: ['password'] });
    assert.equal(response.status, 400);
    assert.equal(response.body.error, 'invalid_request');
  });

  test('fields named like Object.prototype members are ordinary input, never a 500', async () => {
    for (const json of [
      { constructor: 1 },
      { __proto__: { x: 1 } },
      { toString: 'x', grant_type: 'password' },
    ]) {
      const response = await request(server.url, 'POST', '/account/register', {
        raw: JSON.stringify(json),
        headers: { 'Content-Type': 'application/json' },
      });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.ok(response.body.errors, 'a validation problem');
    }
    const form = await request(server.url, 'POST', '/security/generate-token', {
      raw: 'constructor=1&__proto__=2&grant_type=password&scope=api&client_id=frontend&client_secret=frontend-client-secret&username=user%40example.com&password=user-password-change-me',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.status, 200, 'unknown parameters are ignored (RFC 6749 §3.2)');
  });

  test('a guest on a protected route gets 401 with a bare Bearer challenge', async () => {
    const response = await request(server.url, 'GET', '/users/anything');
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer');
  });

  test('CORS: an allowed origin is answered, a preflight too; others get no CORS headers', async () => {
    const allowed = await request(server.url, 'GET', '/', { headers: { Origin: 'https://app.example' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(allowed.headers.get('vary'), 'Origin');
    const other = await request(server.url, 'GET', '/', { headers: { Origin: 'https://evil.example' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    const preflight = await request(server.url, 'OPTIONS', '/security/generate-token', {
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-methods'), 'POST');
    assert.match(String(preflight.headers.get('access-control-allow-headers')), /Authorization/);
  });

  test('bad input leaves stored data unchanged', async () => {
    const before = await server.app.stores.users.findByIdentity(SEEDED_USER.username);
    await request(server.url, 'POST', '/security/generate-token', {
      json: {
        grant_type: 'password',
        scope: 'api',
        ...FRONTEND_CLIENT,
        username: SEEDED_USER.username,
        password: 'wrong',
      },
    });
    await request(server.url, 'POST', '/security/generate-token', {
      raw: '{',
      headers: { 'Content-Type': 'application/json' },
    });
    assert.deepEqual(await server.app.stores.users.findByIdentity(SEEDED_USER.username), before);
  });
});

/** Starts a server with this CONFIG_FILE and expects the start to stop with `message`. */
async function assertStartRefused(contents: object, message: string): Promise<void> {
  let server: TestServer;
  try {
    server = await startTestServer({ env: { CONFIG_FILE: configFile(contents) } });
  } catch (error) {
    assert.ok(error instanceof ConfigError && error.message.includes(message), String(error));
    return;
  }
  await server.close();
  assert.fail(`the start was not refused: ${message}`);
}

describe('configured response headers', () => {
  test('per route name, with * for all routes', async () => {
    const file = configFile({
      responseHeaders: { '*': { 'X-Frame-Options': 'DENY' }, home: { 'X-Home': 'yes' } },
    });
    const server = await startTestServer({ env: { CONFIG_FILE: file } });
    try {
      const home = await request(server.url, 'GET', '/');
      assert.equal(home.headers.get('x-frame-options'), 'DENY');
      assert.equal(home.headers.get('x-home'), 'yes');
      assert.equal(home.headers.get('x-content-type-options'), 'nosniff');
      const other = await request(server.url, 'GET', '/nowhere');
      assert.equal(other.headers.get('x-frame-options'), 'DENY');
      assert.equal(other.headers.get('x-home'), null);
    } finally {
      await server.close();
    }
  });

  for (const [contents, member] of [
    [
      { responseHeaders: { 'security::generate_token': { 'X-A': '1' } } },
      'responseHeaders.security::generate_token',
    ],
    [{ deprecations: { '*': { since: '2025-01-01', sunset: '2099-01-01', link: '/' } } }, 'deprecations.*'],
  ] as const) {
    test(`a route name no route has stops the start: ${member}`, async () => {
      await assertStartRefused(contents, `CONFIG_FILE ${member}: no route`);
    });
  }

  for (const [route, header] of [
    ['security::generate-token', 'Cache-Control'],
    ['security::refresh-token', 'pragma'],
    ['security::authorize', 'Content-Security-Policy'],
    ['security::sign-in', 'X-Frame-Options'],
    ['security::sign-in', 'Referrer-Policy'],
    ['security::stylesheet', 'Cache-Control'],
  ] as const) {
    test(`a header the route sets itself stops the start: ${route} ${header}`, async () => {
      const contents = { responseHeaders: { [route]: { [header]: 'x' } } };
      await assertStartRefused(contents, `CONFIG_FILE responseHeaders.${route}.${header}: this route sets`);
    });
  }
});
