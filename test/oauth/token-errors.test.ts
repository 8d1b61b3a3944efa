/**
 * How the token endpoints answer errors (RFC 6749 §5.2): application/json, never cached,
 * always with an `error` code, the problem members beside it. Every other route keeps
 * application/problem+json.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BackendUnavailable } from '../../src/errors.ts';
import { type JsonResponse, passwordRequest, request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** What every token-endpoint error carries, whatever went wrong. */
function assertTokenError(response: JsonResponse, status: number, error: string): void {
  assert.equal(response.status, status);
  assert.equal(response.headers.get('content-type'), 'application/json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.equal(response.headers.get('pragma'), 'no-cache');
  assert.equal(response.body.error, error);
  assert.equal(typeof response.body.error_description, 'string');
  assert.equal(response.body.status, status);
  assert.equal(response.body.type, 'about:blank');
  assert.equal(typeof response.body.title, 'string');
  assert.equal(typeof response.body.detail, 'string');
}

describe('token endpoint errors', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { BODY_LIMIT: '1kb' } });
  });
  after(() => server.close());

  for (const path of ['/security/generate-token', '/security/refresh-token']) {
    test(`${path}: an OAuth error is application/json, not cached, with the problem members`, async () => {
      const response = await request(server.url, 'POST', path, {
        json: passwordRequest({ password: 'wrong-password' }),
      });
      assertTokenError(response, 400, 'invalid_grant');
      assert.equal(response.body.detail, 'Invalid credentials');
      assert.equal(response.body.error_description, 'Invalid credentials');
    });
  }

  test('a wrong client secret is invalid_client in the same form', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      json: passwordRequest({ client_secret: 'wrong' }),
    });
    assertTokenError(response, 401, 'invalid_client');
    assert.equal(response.headers.get('www-authenticate'), null);
  });

  test('the Basic challenge on invalid_client names the error', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      form: { grant_type: 'password', scope: 'api', ...SEEDED_USER },
      headers: { Authorization: `Basic ${Buffer.from('frontend:wrong').toString('base64')}` },
    });
    assertTokenError(response, 401, 'invalid_client');
    assert.equal(
      response.headers.get('www-authenticate'),
      'Basic realm="token", charset="UTF-8", error="invalid_client"',
    );
  });

  test('a body that is not JSON is invalid_request', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      raw: '{"grant_type": "password",',
      headers: { 'Content-Type': 'application/json' },
    });
    assertTokenError(response, 400, 'invalid_request');
  });

  test('an unsupported content type is 415 invalid_request, described in the characters §5.2 allows', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      raw: 'grant_type=password',
      headers: { 'Content-Type': 'text/"plain"\\ü' },
    });
    assertTokenError(response, 415, 'invalid_request');
    assert.match(String(response.body.error_description), /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/);
  });

  test('a body over the limit is 413 invalid_request', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      json: passwordRequest({ password: 'x'.repeat(2048) }),
    });
    assertTokenError(response, 413, 'invalid_request');
  });

  test('a backend outage is 503 temporarily_unavailable; a bug is 500 server_error', async () => {
    const scopes = server.app.stores.scopes;
    const findByName = scopes.findByName;
    for (const [failure, status, error] of [
      [new BackendUnavailable('MongoDB'), 503, 'temporarily_unavailable'],
      [new Error('a bug'), 500, 'server_error'],
    ] as const) {
      scopes.findByName = async () => {
        throw failure;
      };
      try {
        const response = await request(server.url, 'POST', '/security/generate-token', {
          json: passwordRequest(),
        });
        assertTokenError(response, status, error);
      } finally {
        scopes.findByName = findByName;
      }
    }
  });

  test('other routes keep application/problem+json, without OAuth members or caching headers', async () => {
    const response = await request(server.url, 'POST', '/account/register', {
      raw: '{"identity":',
      headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(response.status, 400);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.headers.get('cache-control'), null);
    assert.equal(response.body.error, undefined);
  });
});
