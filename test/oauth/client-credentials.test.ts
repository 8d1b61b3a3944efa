import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_CLIENT, decodeJwtPart, FRONTEND_CLIENT, request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('client credentials grant', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('issues an access token for the client itself, without a refresh token', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      json: { grant_type: 'client_credentials', scope: 'api', ...ADMIN_CLIENT },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.refresh_token, undefined);
    const claims = decodeJwtPart(String(response.body.access_token), 1);
    assert.equal(claims.kind, 'client');
    assert.equal(claims.client_id, 'admin');
  });

  test('the client role reaches no business route', async () => {
    const { body } = await request(server.url, 'POST', '/security/generate-token', {
      json: { grant_type: 'client_credentials', scope: 'api', ...FRONTEND_CLIENT },
    });
    const user = await server.app.stores.users.findByIdentity(SEEDED_USER.username);
    const response = await request(server.url, 'GET', `/users/${user?.id}`, {
      token: String(body.access_token),
    });
    assert.equal(response.status, 403);
  });
});

describe('OAUTH_GRANTS switches grants off', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { OAUTH_GRANTS: 'password' } });
  });
  after(() => server.close());

  test('a disabled grant is unsupported_grant_type, an enabled one works', async () => {
    for (const grant_type of ['client_credentials', 'refresh_token']) {
      const response = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type, scope: 'api', refresh_token: 'x', ...FRONTEND_CLIENT },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'unsupported_grant_type');
    }
    const login = await request(server.url, 'POST', '/security/generate-token', {
      json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
    });
    assert.equal(login.status, 200);
  });
});
