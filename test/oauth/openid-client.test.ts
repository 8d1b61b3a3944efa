/**
 * openid-client v6, used unchanged, against our token endpoints over plain HTTP: it reads our
 * successes as token responses and every error as an OAuth error (never as a response that
 * is "not JSON").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { ADMIN_CLIENT, FRONTEND_CLIENT, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('openid-client v6 against the token endpoint', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  /** A client configured by hand, as for a server without discovery. */
  function configuration(
    credentials: { client_id: string; client_secret: string },
    authentication: (secret: string) => client.ClientAuth = client.ClientSecretPost,
    path = '/security/generate-token',
  ): client.Configuration {
    const config = new client.Configuration(
      { issuer: server.url, token_endpoint: `${server.url}${path}` },
      credentials.client_id,
      undefined,
      authentication(credentials.client_secret),
    );
    client.allowInsecureRequests(config);
    return config;
  }

  /** The OAuth error code the library found, or a failure naming what it threw instead. */
  async function oauthError(attempt: Promise<unknown>): Promise<{ error: string; status: number }> {
    try {
      await attempt;
    } catch (error) {
      if (error instanceof client.ResponseBodyError) return { error: error.error, status: error.status };
      if (error instanceof client.WWWAuthenticateChallengeError) {
        return { error: String(error.cause[0]?.parameters.error), status: error.status };
      }
      assert.fail(`not read as an OAuth error: ${(error as { code?: string }).code} ${error}`);
    }
    assert.fail('the request succeeded');
  }

  test('client credentials grant', async () => {
    const tokens = await client.clientCredentialsGrant(configuration(ADMIN_CLIENT), { scope: 'api' });
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(typeof tokens.access_token, 'string');
    assert.equal(tokens.expiresIn(), 86400);
  });

  test('password grant, then refresh with Basic client authentication at the refresh endpoint', async () => {
    const login = await client.genericGrantRequest(configuration(FRONTEND_CLIENT), 'password', {
      ...SEEDED_USER,
      scope: 'api',
    });
    assert.equal(typeof login.refresh_token, 'string');
    const refreshing = configuration(FRONTEND_CLIENT, client.ClientSecretBasic, '/security/refresh-token');
    const refreshed = await client.refreshTokenGrant(refreshing, String(login.refresh_token));
    assert.equal(typeof refreshed.access_token, 'string');
    assert.notEqual(refreshed.refresh_token, login.refresh_token);
    // The rotated token presented again: an OAuth error, which the library reads as one.
    assert.deepEqual(await oauthError(client.refreshTokenGrant(refreshing, String(login.refresh_token))), {
      error: 'invalid_grant',
      status: 400,
    });
  });

  test('a wrong client secret is invalid_client, in the body and in the Basic challenge', async () => {
    const wrong = { ...ADMIN_CLIENT, client_secret: 'wrong' };
    for (const authentication of [client.ClientSecretPost, client.ClientSecretBasic]) {
      assert.deepEqual(
        await oauthError(
          client.clientCredentialsGrant(configuration(wrong, authentication), { scope: 'api' }),
        ),
        { error: 'invalid_client', status: 401 },
      );
    }
  });

  test('a wrong password is invalid_grant', async () => {
    const attempt = client.genericGrantRequest(configuration(FRONTEND_CLIENT), 'password', {
      ...SEEDED_USER,
      password: 'wrong-password',
      scope: 'api',
    });
    assert.deepEqual(await oauthError(attempt), { error: 'invalid_grant', status: 400 });
  });

  test('a request without scope is invalid_scope', async () => {
    assert.deepEqual(await oauthError(client.clientCredentialsGrant(configuration(ADMIN_CLIENT))), {
      error: 'invalid_scope',
      status: 400,
    });
  });
});
