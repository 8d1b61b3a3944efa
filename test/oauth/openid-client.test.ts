/**
 * openid-client v6, used unchanged, against our authorization server over plain HTTP: it
 * builds the authorization request with PKCE and redeems the code the sign-in returns, reads
 * our successes as token responses and every error as an OAuth error (never as a response
 * that is "not JSON").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import {
  csrfTokenOf,
  postSignIn,
  registerClient,
  SPA_REDIRECT,
  superuserToken,
} from '../support/authorization.ts';
import { ADMIN_CLIENT, FRONTEND_CLIENT, request, SEEDED_USER } from '../support/http.ts';
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
    assert.equal(tokens.expires_in, 86400);
    // The library counts down from its own clock, so a second may have passed since.
    assert.ok([86399, 86400].includes(tokens.expiresIn() ?? 0), String(tokens.expiresIn()));
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
    // Presented again, the rotated token gets the same successor (a retry); once that is
    // used, it is an OAuth error, which the library reads as one.
    const retried = await client.refreshTokenGrant(refreshing, String(login.refresh_token));
    assert.equal(retried.refresh_token, refreshed.refresh_token);
    await client.refreshTokenGrant(refreshing, String(refreshed.refresh_token));
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

describe('openid-client v6: the authorization code grant with PKCE', () => {
  const ISSUER = 'https://issuer.example.test';
  let server: TestServer;
  let superuser: string;
  before(async () => {
    server = await startTestServer({ env: { APP_URL: ISSUER } });
    superuser = await superuserToken(server.url);
  });
  after(() => server.close());

  /** The server as a client knows it without discovery; it promises `iss` in every response (RFC 9207). */
  function configuration(clientId: string, authentication: client.ClientAuth): client.Configuration {
    const config = new client.Configuration(
      {
        issuer: ISSUER,
        authorization_endpoint: `${server.url}/security/authorize`,
        token_endpoint: `${server.url}/security/generate-token`,
        authorization_response_iss_parameter_supported: true,
      },
      clientId,
      undefined,
      authentication,
    );
    client.allowInsecureRequests(config);
    return config;
  }

  /** What the browser does in between: open the URL, sign in, follow nothing but the redirect. */
  async function signIn(authorizationUrl: URL): Promise<URL> {
    const page = await fetch(authorizationUrl, { redirect: 'manual' });
    assert.equal(page.status, 200);
    const signedIn = await postSignIn(server.url, {
      csrf_token: csrfTokenOf(await page.text()),
      ...SEEDED_USER,
    });
    assert.equal(signedIn.status, 303, signedIn.html);
    return new URL(String(signedIn.location));
  }

  /** An authorization request with PKCE and state, as the library builds it. */
  async function authorizationRequest(
    config: client.Configuration,
    scope = 'api',
    redirectUri = SPA_REDIRECT,
  ) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    return { url, checks: { pkceCodeVerifier: verifier, expectedState: state } };
  }

  async function flow(
    config: client.Configuration,
    redirectUri = SPA_REDIRECT,
  ): Promise<client.TokenEndpointResponse> {
    const { url, checks } = await authorizationRequest(config, 'api', redirectUri);
    return client.authorizationCodeGrant(config, await signIn(url), checks);
  }

  test('a public client (no client authentication)', async () => {
    const spa = await registerClient(server.url, superuser, { name: 'spa', type: 'public' });
    const tokens = await flow(configuration(spa.name, client.None()));
    assert.equal(tokens.token_type, 'bearer');
    const own = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
    assert.equal(own.body.identity, SEEDED_USER.username);
    const refreshed = await client.refreshTokenGrant(
      configuration(spa.name, client.None()),
      String(tokens.refresh_token),
    );
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
  });

  test("a mobile app: a public client whose redirect URI is a private-use scheme (RFC 8252 §7.1), as AppAuth's", async () => {
    const redirectUri = 'com.example.app:/oauth2redirect';
    const mobile = await registerClient(server.url, superuser, {
      name: 'mobile',
      type: 'public',
      redirectUris: [redirectUri],
    });
    const tokens = await flow(configuration(mobile.name, client.None()), redirectUri);
    const own = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
    assert.equal(own.body.identity, SEEDED_USER.username);
    assert.equal(typeof tokens.refresh_token, 'string');
  });

  test('a confidential client, with its secret in HTTP Basic and in the body', async () => {
    const web = await registerClient(server.url, superuser, { name: 'web', type: 'confidential' });
    for (const authentication of [client.ClientSecretBasic, client.ClientSecretPost]) {
      const tokens = await flow(configuration(web.name, authentication(String(web.secret))));
      assert.equal(typeof tokens.access_token, 'string');
      assert.equal(typeof tokens.refresh_token, 'string');
    }
  });

  test('a refused authorization request reaches the library as an OAuth error with the state', async () => {
    const spa = await registerClient(server.url, superuser, { name: 'spa-refused', type: 'public' });
    const config = configuration(spa.name, client.None());
    const { url, checks } = await authorizationRequest(config, 'not-a-scope');
    const page = await fetch(url, { redirect: 'manual' });
    assert.equal(page.status, 303);
    await assert.rejects(
      client.authorizationCodeGrant(config, new URL(String(page.headers.get('location'))), checks),
      (error: unknown) =>
        error instanceof client.AuthorizationResponseError && error.error === 'invalid_scope',
    );
  });
});
