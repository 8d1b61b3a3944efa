/**
 * The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636, RFC 9700, RFC 9207) over
 * HTTP, as a browser and an app use it: the sign-in page, the redirect back with a code, the
 * token request; and every refusal on the way.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_SCOPE_LENGTH, MAX_STATE_LENGTH } from '../../src/oauth/authorization-endpoint.ts';
import { PASSWORD, storeAccount } from '../accounts/fixtures.ts';
import {
  authorizationCode,
  authorizationQuery,
  csrfTokenOf,
  exchangeCode,
  type LargestRequest,
  openAuthorization,
  type PageAnswer,
  pkce,
  postSignIn,
  type RegisteredClient,
  redirectParameters,
  registerClient,
  registerLargestRequest,
  SPA_REDIRECT,
  superuserToken,
} from '../support/authorization.ts';
import { FRONTEND_CLIENT, request, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';

const ISSUER = 'https://issuer.example.test';

describeBackendSkip();

/** The page of a request that must not be redirected anywhere. */
function assertRefusedOnThePage(page: PageAnswer, message: RegExp): void {
  assert.equal(page.status, 400, page.html);
  assert.equal(page.location, null, 'never redirected');
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(page.html, message);
  assert.doesNotMatch(page.html, /<form/);
}

for (const backend of backends())
  describe(`authorization code grant with PKCE (${backend})`, () => {
    let server: TestServer;
    let spa: RegisteredClient;
    let web: RegisteredClient;
    let user: { username: string; password: string };
    let superuser: string;

    before(async () => {
      server = await startTestServer({ backend, env: { APP_URL: ISSUER } });
      superuser = await superuserToken(server.url);
      spa = await registerClient(server.url, superuser, { name: `spa-${randomUUID()}`, type: 'public' });
      web = await registerClient(server.url, superuser, {
        name: `web-${randomUUID()}`,
        type: 'confidential',
      });
      user = { username: `${randomUUID()}@example.com`, password: PASSWORD };
      await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: user.username,
      });
    });
    after(() => server.close());

    describe('the way through', () => {
      test('a public client: sign-in page, redirect with code, state and iss, tokens for the code', async () => {
        const { verifier, challenge } = pkce();
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, challenge));
        assert.equal(page.status, 200);
        assert.match(page.html, /<html lang="en">/);
        assert.match(page.html, new RegExp(`<h1>Sign in to ${spa.name}</h1>`));
        assert.match(page.html, /<label for="username">Email address<\/label>/);
        assert.match(page.html, /<label for="password">Password<\/label>/);
        assert.match(page.html, /href="\/security\/sign-in.css"/);

        const signedIn = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...user });
        assert.equal(signedIn.status, 303);
        assert.ok(signedIn.location?.startsWith(`${SPA_REDIRECT}?`), String(signedIn.location));
        const parameters = redirectParameters(signedIn.location);
        assert.equal(parameters.get('state'), 'state-of-the-app');
        assert.equal(parameters.get('iss'), ISSUER);
        const code = parameters.get('code') ?? '';
        assert.ok(Buffer.from(code, 'base64url').length >= 16, 'at least 128 random bits');
        assert.equal(signedIn.headers.get('cache-control'), 'no-store');

        const tokens = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
        assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
        assert.equal(tokens.body.token_type, 'Bearer');
        assert.equal(tokens.headers.get('cache-control'), 'no-store');
        const own = await request(server.url, 'GET', '/users/my-account', {
          token: String(tokens.body.access_token),
        });
        assert.equal(own.status, 200);
        assert.equal(own.body.identity, user.username);

        // A public client refreshes with its client_id alone; the token rotates.
        const refreshed = await request(server.url, 'POST', '/security/refresh-token', {
          form: {
            grant_type: 'refresh_token',
            client_id: spa.name,
            refresh_token: String(tokens.body.refresh_token),
          },
        });
        assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
        assert.notEqual(refreshed.body.refresh_token, tokens.body.refresh_token);

        // Or as HTTP Basic with an empty password, as some libraries send it.
        const asBasic = await request(server.url, 'POST', '/security/refresh-token', {
          form: { grant_type: 'refresh_token', refresh_token: String(refreshed.body.refresh_token) },
          headers: { Authorization: `Basic ${Buffer.from(`${spa.name}:`).toString('base64')}` },
        });
        assert.equal(asBasic.status, 200, JSON.stringify(asBasic.body));
      });

      test('a confidential client authenticates the token request with its secret, Basic or body', async () => {
        const basic = `Basic ${Buffer.from(`${web.name}:${web.secret}`).toString('base64')}`;
        const authentications: { headers: Record<string, string>; parameters: Record<string, string> }[] = [
          { headers: { Authorization: basic }, parameters: {} },
          { headers: {}, parameters: { client_id: web.name, client_secret: String(web.secret) } },
        ];
        for (const authentication of authentications) {
          const { verifier, challenge } = pkce();
          const code = await authorizationCode(server.url, web.name, challenge, user);
          const tokens = await exchangeCode(
            server.url,
            { ...authentication.parameters, code, code_verifier: verifier },
            authentication.headers,
          );
          assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
          assert.equal(typeof tokens.body.refresh_token, 'string');
        }
      });

      test('a confidential client cannot leave its secret out; a public one cannot present one', async () => {
        const { verifier, challenge } = pkce();
        const code = await authorizationCode(server.url, web.name, challenge, user);
        const bare = await exchangeCode(server.url, { client_id: web.name, code, code_verifier: verifier });
        assert.equal(bare.status, 400);
        assert.equal(bare.body.error, 'invalid_request');
        const spaCode = await authorizationCode(server.url, spa.name, challenge, user);
        const withSecret = await exchangeCode(server.url, {
          client_id: spa.name,
          client_secret: 'anything',
          code: spaCode,
          code_verifier: verifier,
        });
        assert.equal(withSecret.status, 401);
        assert.equal(withSecret.body.error, 'invalid_client');
        const withBasicSecret = await exchangeCode(
          server.url,
          { code: spaCode, code_verifier: verifier },
          { Authorization: `Basic ${Buffer.from(`${spa.name}:anything`).toString('base64')}` },
        );
        assert.equal(withBasicSecret.status, 401);
        assert.match(String(withBasicSecret.headers.get('www-authenticate')), /^Basic /);
        // The refusals left the codes usable.
        const tokens = await exchangeCode(server.url, {
          client_id: spa.name,
          code: spaCode,
          code_verifier: verifier,
        });
        assert.equal(tokens.status, 200);
      });

      test('a loopback redirect URI of a native app matches on any port, and only on the port', async () => {
        const cli = await registerClient(server.url, superuser, {
          name: `cli-${randomUUID()}`,
          type: 'public',
          redirectUris: ['http://127.0.0.1/callback'],
        });
        const { verifier, challenge } = pkce();
        const redirectUri = 'http://127.0.0.1:53124/callback';
        const page = await openAuthorization(
          server.url,
          authorizationQuery(cli.name, challenge, { redirect_uri: redirectUri }),
        );
        assert.equal(page.status, 200, page.html);
        assert.match(
          page.headers.get('content-security-policy') ?? '',
          /form-action 'self' http:\/\/127\.0\.0\.1:53124;/,
        );
        const signedIn = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...user });
        assert.ok(signedIn.location?.startsWith(`${redirectUri}?`));
        const code = redirectParameters(signedIn.location).get('code') ?? '';
        const tokens = await request(server.url, 'POST', '/security/generate-token', {
          form: {
            grant_type: 'authorization_code',
            client_id: cli.name,
            code,
            redirect_uri: redirectUri,
            code_verifier: verifier,
          },
        });
        assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
        for (const other of [
          'http://127.0.0.1:0/callback',
          'http://127.0.0.1:53124/other',
          'http://localhost:53124/callback',
          'http://127.0.0.2:53124/callback',
          'https://127.0.0.1:53124/callback',
        ]) {
          const refused = await openAuthorization(
            server.url,
            authorizationQuery(cli.name, challenge, { redirect_uri: other }),
          );
          assertRefusedOnThePage(refused, /redirect_uri is not registered/);
        }
      });

      test("a mobile app's private-use redirect URI: form-action names its scheme, and it matches exactly", async () => {
        const redirectUri = 'com.example.app:/oauth2redirect';
        const mobile = await registerClient(server.url, superuser, {
          name: `mobile-${randomUUID()}`,
          type: 'public',
          redirectUris: [redirectUri],
        });
        const { verifier, challenge } = pkce();
        const page = await openAuthorization(
          server.url,
          authorizationQuery(mobile.name, challenge, { redirect_uri: redirectUri }),
        );
        assert.equal(page.status, 200, page.html);
        // Chromium blocks the redirect to the app under 'self' alone, and under 'self' null.
        assert.match(
          page.headers.get('content-security-policy') ?? '',
          /form-action 'self' com\.example\.app:;/,
        );
        assert.doesNotMatch(page.html, /\bnull\b/);
        const signedIn = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...user });
        assert.equal(signedIn.status, 303, signedIn.html);
        assert.ok(signedIn.location?.startsWith(`${redirectUri}?`), String(signedIn.location));
        const tokens = await exchangeCode(server.url, {
          client_id: mobile.name,
          code: redirectParameters(signedIn.location).get('code') ?? '',
          code_verifier: verifier,
          redirect_uri: redirectUri,
        });
        assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
        for (const other of [
          'com.example.app:/oauth2redirect/more',
          'com.example.app:/oauth2redirect?more=1',
          'com.example.app://oauth2redirect',
          'com.example.other:/oauth2redirect',
          'COM.EXAMPLE.APP:/oauth2redirect',
        ]) {
          const refused = await openAuthorization(
            server.url,
            authorizationQuery(mobile.name, challenge, { redirect_uri: other }),
          );
          assertRefusedOnThePage(refused, /redirect_uri is not registered/);
        }
      });

      test('the sign-in page is sent with its security headers', async () => {
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
        assert.equal(
          page.headers.get('content-security-policy'),
          "default-src 'none'; style-src 'self'; form-action 'self' https://app.example.test; frame-ancestors 'none'; base-uri 'none'",
        );
        assert.equal(page.headers.get('x-frame-options'), 'DENY');
        assert.equal(page.headers.get('cache-control'), 'no-store');
        assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
        // Nothing of the page's address reaches another site; its own form says where it comes from.
        assert.equal(page.headers.get('referrer-policy'), 'same-origin');
        assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
        const css = await fetch(`${server.url}/security/sign-in.css`);
        assert.equal(css.status, 200);
        assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
        assert.match(await css.text(), /button/);
      });
    });

    describe('requests refused on the page, never redirected', () => {
      const cases: [string, (spaName: string) => Record<string, string | null>, RegExp][] = [
        ['an unknown client', () => ({ client_id: 'no-such-client' }), /client_id\) is not registered/],
        ['no client', () => ({ client_id: null }), /client_id\) is not registered/],
        ['no redirect URI', () => ({ redirect_uri: null }), /redirect_uri is not registered/],
        [
          'an unregistered redirect URI',
          () => ({ redirect_uri: 'https://evil.example/callback' }),
          /not registered/,
        ],
        ...[
          'https://app.example.test/callback.evil.example',
          'https://app.example.test:8443/callback',
          'https://app.example.test/callback/more',
          'https://app.example.test/callback?next=https://evil.example',
          'https://app.example.test/callbac',
          'http://app.example.test/callback',
          'https://APP.example.test/callback',
          'https://app.example.test/callback#',
        ].map((uri): [string, () => Record<string, string | null>, RegExp] => [
          `a redirect URI that only partly matches: ${uri}`,
          () => ({ redirect_uri: uri }),
          /not registered/,
        ]),
      ];
      for (const [name, overrides, message] of cases) {
        test(name, async () => {
          const page = await openAuthorization(
            server.url,
            authorizationQuery(spa.name, pkce().challenge, overrides(spa.name)),
          );
          assertRefusedOnThePage(page, message);
          assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
          assert.equal(page.headers.get('x-frame-options'), 'DENY');
        });
      }

      test('a redirect URI stored under older rules, whose host would break the page CSP', async () => {
        const uri = "https://a;b'c.example.test/cb";
        const name = `legacy-${randomUUID()}`;
        const at = new Date();
        await server.app.stores.clients.createIfAbsent({
          id: randomUUID(),
          name,
          type: 'public',
          secretDigest: null,
          previousSecretDigest: null,
          previousSecretExpiresAt: null,
          accountKind: 'user',
          redirectUris: [uri],
          grants: ['authorization_code'],
          createdAt: at,
          updatedAt: at,
        });
        const page = await openAuthorization(
          server.url,
          authorizationQuery(name, pkce().challenge, { redirect_uri: uri }),
        );
        assertRefusedOnThePage(page, /redirect_uri is not registered/);
        assert.doesNotMatch(page.headers.get('content-security-policy') ?? '', /example\.test/);
      });

      test("a client without redirect URIs (the password grant's frontend)", async () => {
        const page = await openAuthorization(
          server.url,
          authorizationQuery(FRONTEND_CLIENT.client_id, pkce().challenge),
        );
        assertRefusedOnThePage(page, /redirect_uri is not registered/);
      });
    });

    describe('requests refused back to the client, with state and iss', () => {
      const cases: [string, Record<string, string | null>, string][] = [
        ['the implicit grant (response_type=token)', { response_type: 'token' }, 'unsupported_response_type'],
        ['another response type', { response_type: 'code id_token' }, 'unsupported_response_type'],
        ['no response type', { response_type: null }, 'invalid_request'],
        ['no PKCE', { code_challenge: null, code_challenge_method: null }, 'invalid_request'],
        ['no code_challenge_method (plain by default)', { code_challenge_method: null }, 'invalid_request'],
        ['the plain method', { code_challenge_method: 'plain' }, 'invalid_request'],
        ['a challenge that is no S256 digest', { code_challenge: 'short' }, 'invalid_request'],
        ['an unknown scope', { scope: 'api admin' }, 'invalid_scope'],
        ['no scope', { scope: null }, 'invalid_scope'],
      ];
      for (const [name, overrides, error] of cases) {
        test(`${name}: ${error}`, async () => {
          const page = await openAuthorization(
            server.url,
            authorizationQuery(spa.name, pkce().challenge, overrides),
          );
          assert.equal(page.status, 303, page.html);
          assert.ok(page.location?.startsWith(`${SPA_REDIRECT}?`));
          const parameters = redirectParameters(page.location);
          assert.equal(parameters.get('error'), error);
          assert.equal(parameters.get('state'), 'state-of-the-app');
          assert.equal(parameters.get('iss'), ISSUER);
          assert.equal(parameters.get('code'), null);
        });
      }

      test('a repeated parameter: invalid_request', async () => {
        const query = `${authorizationQuery(spa.name, pkce().challenge)}&scope=api`;
        const page = await openAuthorization(server.url, query);
        assert.equal(redirectParameters(page.location).get('error'), 'invalid_request');
      });

      test('a client without the authorization code grant: unauthorized_client', async () => {
        const machine = await registerClient(server.url, superuser, {
          name: `machine-${randomUUID()}`,
          type: 'confidential',
          grants: ['client_credentials'],
        });
        const page = await openAuthorization(server.url, authorizationQuery(machine.name, pkce().challenge));
        assert.equal(page.status, 303);
        assert.equal(redirectParameters(page.location).get('error'), 'unauthorized_client');
      });

      test('a request without state is answered without state', async () => {
        const page = await openAuthorization(
          server.url,
          authorizationQuery(spa.name, pkce().challenge, { state: null, response_type: 'token' }),
        );
        const parameters = redirectParameters(page.location);
        assert.equal(parameters.has('state'), false);
        assert.equal(parameters.get('iss'), ISSUER);
      });
    });

    describe('the sign-in form', () => {
      test('a wrong password shows the form again with the error and the name typed, for the same request', async () => {
        const { verifier, challenge } = pkce();
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, challenge));
        const first = csrfTokenOf(page.html);
        const refused = await postSignIn(server.url, {
          csrf_token: first,
          username: user.username,
          password: 'wrong',
        });
        assert.equal(refused.status, 400);
        assert.equal(refused.location, null);
        assert.match(refused.html, /role="alert">Invalid credentials</);
        assert.match(refused.html, new RegExp(`value="${user.username}"`));
        assert.match(
          refused.headers.get('content-security-policy') ?? '',
          /form-action 'self' https:\/\/app\.example\.test;/,
        );
        const second = csrfTokenOf(refused.html);
        assert.notEqual(second, first, 'a new one-time value');
        // The used value is spent; the new one carries the request on.
        const replayed = await postSignIn(server.url, { csrf_token: first, ...user });
        assertRefusedOnThePage(replayed, /expired or was already used/);
        const signedIn = await postSignIn(server.url, { csrf_token: second, ...user });
        assert.equal(signedIn.status, 303);
        const parameters = redirectParameters(signedIn.location);
        assert.equal(parameters.get('state'), 'state-of-the-app');
        const tokens = await exchangeCode(server.url, {
          client_id: spa.name,
          code: parameters.get('code') ?? '',
          code_verifier: verifier,
        });
        assert.equal(tokens.status, 200);
      });

      test('an unknown, a pending and an inactive account hear the same as a wrong password', async () => {
        const hash = (p: string) => server.app.passwords.hash(p);
        const pending = `${randomUUID()}@example.com`;
        const inactive = `${randomUUID()}@example.com`;
        await storeAccount(server.app.stores.users, hash, { identity: pending, status: 'pending' });
        await storeAccount(server.app.stores.users, hash, { identity: inactive, status: 'inactive' });
        for (const username of [`${randomUUID()}@example.com`, pending, inactive]) {
          const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
          const refused = await postSignIn(server.url, {
            csrf_token: csrfTokenOf(page.html),
            username,
            password: PASSWORD,
          });
          assert.equal(refused.status, 400, username);
          assert.match(refused.html, /role="alert">Invalid credentials</);
        }
      });

      test('an administrators client signs in administrators, not users', async () => {
        const console = await registerClient(server.url, superuser, {
          name: `console-${randomUUID()}`,
          type: 'public',
          accounts: 'admin',
        });
        const page = await openAuthorization(server.url, authorizationQuery(console.name, pkce().challenge));
        assert.match(page.html, /<label for="username">Administrator name<\/label>/);
        const refused = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...user });
        assert.equal(refused.status, 400);
        const code = await authorizationCode(server.url, console.name, pkce().challenge, {
          username: 'admin',
          password: 'admin-password-change-me',
        });
        assert.ok(code);
      });

      test('a form without its one-time value, with one changed, or with one used already, signs nobody in', async () => {
        assertRefusedOnThePage(await postSignIn(server.url, { ...user }), /invalid/i);
        assertRefusedOnThePage(
          await postSignIn(server.url, { csrf_token: 'A'.repeat(43), ...user }),
          /expired or was already used/,
        );
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
        const value = csrfTokenOf(page.html);
        // The value carries the request, sealed: changed, it is refused.
        const [keyId = '', payload = '', seal = ''] = value.split('.');
        const request = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
        const forged = Buffer.from(
          JSON.stringify({ ...request, redirectUri: 'https://evil.example/' }),
        ).toString('base64url');
        for (const tampered of [
          `${keyId}.${forged}.${seal}`,
          `${keyId}.${payload}.${'A'.repeat(43)}`,
          `${keyId}.${payload}x.${seal}`,
          `other-key.${payload}.${seal}`,
          `${payload}.${seal}`,
        ]) {
          const refused = await postSignIn(server.url, { csrf_token: tampered, ...user });
          assertRefusedOnThePage(refused, /expired or was already used/);
        }
        assert.equal((await postSignIn(server.url, { csrf_token: value, ...user })).status, 303);
        const replayed = await postSignIn(server.url, { csrf_token: value, ...user });
        assertRefusedOnThePage(replayed, /expired or was already used/);
      });

      test('a post refused before its password is checked leaves the form usable', async () => {
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
        const value = csrfTokenOf(page.html);
        const incompletes: Record<string, string>[] = [
          { csrf_token: value, username: user.username },
          { csrf_token: value, ...user, remember: 'yes' },
          { csrf_token: value, username: 'x'.repeat(321), password: user.password },
        ];
        for (const incomplete of incompletes) {
          const refused = await postSignIn(server.url, incomplete);
          assertRefusedOnThePage(refused, /The request body is invalid/);
        }
        assert.equal((await postSignIn(server.url, { csrf_token: value, ...user })).status, 303);
      });

      test('a post another site sends is refused before the form is used, whatever its password (login CSRF)', async () => {
        const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
        const form = { csrf_token: csrfTokenOf(page.html), ...user };
        const foreign: Record<string, string>[] = [
          { 'Sec-Fetch-Site': 'cross-site' },
          { 'Sec-Fetch-Site': 'cross-site', Origin: ISSUER },
          { 'Sec-Fetch-Site': 'same-site', Origin: 'https://other.issuer.example.test' },
          { Origin: 'https://evil.example' },
          { Origin: 'null' },
          { Origin: `${ISSUER}:8443` },
          { Origin: ISSUER.replace('https:', 'http:') },
        ];
        for (const headers of foreign) {
          const refused = await postSignIn(server.url, form, headers);
          assert.equal(refused.status, 403, JSON.stringify(headers));
          assert.equal(refused.location, null);
          assert.match(refused.html, /sent from another site/);
        }
        const ours = { Origin: ISSUER, 'Sec-Fetch-Site': 'same-origin' };
        const signedIn = await postSignIn(server.url, form, ours);
        assert.equal(signedIn.status, 303, signedIn.html);
      });

      test('a post from the page itself, or from no browser, signs in', async () => {
        const own: Record<string, string>[] = [
          { 'Sec-Fetch-Site': 'same-origin' },
          { 'Sec-Fetch-Site': 'none' },
          { Origin: ISSUER },
          {},
        ];
        for (const headers of own) {
          const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
          const signedIn = await postSignIn(
            server.url,
            { csrf_token: csrfTokenOf(page.html), ...user },
            headers,
          );
          assert.equal(signedIn.status, 303, JSON.stringify(headers));
        }
      });

      test('the form takes application/x-www-form-urlencoded only', async () => {
        const response = await fetch(`${server.url}/security/authorize`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ csrf_token: 'A'.repeat(43), ...user }),
        });
        assert.equal(response.status, 415);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      });

      test('a client deleted while its form was open signs nobody in', async () => {
        const doomed = await registerClient(server.url, superuser, {
          name: `doomed-${randomUUID()}`,
          type: 'public',
        });
        const page = await openAuthorization(server.url, authorizationQuery(doomed.name, pkce().challenge));
        const deleted = await request(server.url, 'DELETE', `/oauth-clients/${doomed.name}`, {
          token: superuser,
        });
        assert.equal(deleted.status, 204);
        const refused = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...user });
        assertRefusedOnThePage(refused, /no longer accepts/);
      });
    });

    describe('the token request', () => {
      async function freshCode(client = spa) {
        const { verifier, challenge } = pkce();
        return { verifier, code: await authorizationCode(server.url, client.name, challenge, user) };
      }

      test('a missing or wrong code_verifier is refused, and leaves the code usable', async () => {
        const { verifier, code } = await freshCode();
        const missing = await exchangeCode(server.url, { client_id: spa.name, code });
        assert.equal(missing.status, 400);
        assert.equal(missing.body.error, 'invalid_request');
        const wrong = await exchangeCode(server.url, {
          client_id: spa.name,
          code,
          code_verifier: pkce().verifier,
        });
        assert.equal(wrong.status, 400);
        assert.equal(wrong.body.error, 'invalid_grant');
        const malformed = await exchangeCode(server.url, {
          client_id: spa.name,
          code,
          code_verifier: 'short',
        });
        assert.equal(malformed.body.error, 'invalid_request');
        const right = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
        assert.equal(right.status, 200);
      });

      test("a redirect_uri other than the request's is invalid_grant, and leaves the code usable", async () => {
        const { verifier, code } = await freshCode();
        for (const redirectUri of [`${SPA_REDIRECT}/`, 'https://app.example.test/other']) {
          const refused = await exchangeCode(server.url, {
            client_id: spa.name,
            code,
            code_verifier: verifier,
            redirect_uri: redirectUri,
          });
          assert.equal(refused.body.error, 'invalid_grant', redirectUri);
        }
        const { redirect_uri: _omitted, ...without } = { redirect_uri: '' };
        const missing = await request(server.url, 'POST', '/security/generate-token', {
          form: {
            grant_type: 'authorization_code',
            client_id: spa.name,
            code,
            code_verifier: verifier,
            ...without,
          },
        });
        assert.equal(missing.body.error, 'invalid_request');
        assert.equal(
          (await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier })).status,
          200,
        );
      });

      test('a code whose redirect URI the client no longer registers is invalid_grant, and stays usable', async () => {
        const app = await registerClient(server.url, superuser, {
          name: `moving-${randomUUID()}`,
          type: 'public',
          redirectUris: [SPA_REDIRECT, 'https://app.example.test/other'],
        });
        const { verifier, code } = await freshCode(app);
        const change = (redirectUris: string[]) =>
          request(server.url, 'PATCH', `/oauth-clients/${app.name}`, {
            token: superuser,
            json: { redirectUris },
          });
        assert.equal((await change(['https://app.example.test/other'])).status, 200);
        const refused = await exchangeCode(server.url, {
          client_id: app.name,
          code,
          code_verifier: verifier,
        });
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error, 'invalid_grant');
        assert.match(String(refused.body.error_description), /no longer registered/);
        assert.equal((await change([SPA_REDIRECT])).status, 200);
        const exchanged = await exchangeCode(server.url, {
          client_id: app.name,
          code,
          code_verifier: verifier,
        });
        assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
      });

      test("another client's code is invalid_grant", async () => {
        const { verifier, code } = await freshCode(web);
        const stolen = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
        assert.equal(stolen.status, 400);
        assert.equal(stolen.body.error, 'invalid_grant');
      });

      test('an unknown code is invalid_grant', async () => {
        for (const code of ['A'.repeat(43), 'not-a-code']) {
          const refused = await exchangeCode(server.url, {
            client_id: spa.name,
            code,
            code_verifier: pkce().verifier,
          });
          assert.equal(refused.body.error, 'invalid_grant', code);
        }
      });

      test('a code presented twice is refused, and the tokens issued for it are revoked', async () => {
        const { verifier, code } = await freshCode();
        const first = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
        assert.equal(first.status, 200);
        const second = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
        assert.equal(second.status, 400);
        assert.equal(second.body.error, 'invalid_grant');
        const refresh = await request(server.url, 'POST', '/security/refresh-token', {
          form: {
            grant_type: 'refresh_token',
            client_id: spa.name,
            refresh_token: String(first.body.refresh_token),
          },
        });
        assert.equal(refresh.status, 400);
        assert.equal(refresh.body.error, 'invalid_grant');
      });

      test('a code presented twice at once: no refresh token survives', async () => {
        const { verifier, code } = await freshCode();
        const answers = await Promise.all(
          [1, 2].map(() => exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier })),
        );
        assert.ok(answers.filter((answer) => answer.status === 200).length <= 1);
        for (const answer of answers.filter((candidate) => candidate.status === 200)) {
          const refresh = await request(server.url, 'POST', '/security/refresh-token', {
            form: {
              grant_type: 'refresh_token',
              client_id: spa.name,
              refresh_token: String(answer.body.refresh_token),
            },
          });
          assert.equal(refresh.body.error, 'invalid_grant');
        }
      });

      test('a client without the grant is unauthorized_client', async () => {
        const { verifier, code } = await freshCode();
        const refused = await exchangeCode(server.url, { ...FRONTEND_CLIENT, code, code_verifier: verifier });
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error, 'unauthorized_client');
      });

      test('a code whose account signed out everywhere since is invalid_grant', async () => {
        const { verifier, code } = await freshCode();
        const account = await server.app.stores.users.findByIdentity(user.username);
        assert.ok(account);
        await server.app.stores.users.update(account.id, { sessionKey: randomUUID() });
        const refused = await exchangeCode(server.url, {
          client_id: spa.name,
          code,
          code_verifier: verifier,
        });
        assert.equal(refused.body.error, 'invalid_grant');
        await server.app.stores.users.update(account.id, { sessionKey: account.sessionKey });
      });

      test('the codes and refresh tokens of a deleted client are refused, also under a client registered again with its name', async () => {
        const gone = await registerClient(server.url, superuser, {
          name: `gone-${randomUUID()}`,
          type: 'public',
        });
        const { verifier, code } = await freshCode(gone);
        const tokens = await exchangeCode(server.url, {
          client_id: gone.name,
          code,
          code_verifier: verifier,
        });
        const later = await freshCode(gone);
        assert.equal(
          (await request(server.url, 'DELETE', `/oauth-clients/${gone.name}`, { token: superuser })).status,
          204,
        );
        const refresh = () =>
          request(server.url, 'POST', '/security/refresh-token', {
            form: {
              grant_type: 'refresh_token',
              client_id: gone.name,
              refresh_token: String(tokens.body.refresh_token),
            },
          });
        const exchange = () =>
          exchangeCode(server.url, { client_id: gone.name, code: later.code, code_verifier: later.verifier });
        assert.equal((await refresh()).body.error, 'invalid_client');
        assert.equal((await exchange()).body.error, 'invalid_client');
        await registerClient(server.url, superuser, { name: gone.name, type: 'public' });
        assert.equal((await refresh()).body.error, 'invalid_grant');
        assert.equal((await exchange()).body.error, 'invalid_grant');
      });
    });
  });

describe('the largest authorization request', () => {
  let server: TestServer;
  let largest: LargestRequest;
  before(async () => {
    server = await startTestServer();
    largest = await registerLargestRequest(server, await superuserToken(server.url));
  });
  after(() => server.close());

  const query = (challenge: string, overrides: Record<string, string | null>) =>
    authorizationQuery(largest.clientName, challenge, {
      redirect_uri: largest.redirectUri,
      scope: largest.scope,
      ...overrides,
    });

  test('at every bound, the sign-in page can be posted and finishes with a code and the state', async () => {
    const { state } = largest;
    const { verifier, challenge } = pkce();
    const page = await openAuthorization(server.url, query(challenge, { state }));
    assert.equal(page.status, 200, page.html);
    const signedIn = await postSignIn(server.url, { csrf_token: csrfTokenOf(page.html), ...SEEDED_USER });
    assert.equal(signedIn.status, 303, signedIn.html);
    const parameters = redirectParameters(signedIn.location);
    assert.equal(parameters.get('state'), state);
    const tokens = await exchangeCode(server.url, {
      client_id: largest.clientName,
      code: parameters.get('code') ?? '',
      redirect_uri: largest.redirectUri,
      code_verifier: verifier,
    });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  });

  for (const [name, overrides, stateBack] of [
    ['a state one character too long', { state: 'a'.repeat(MAX_STATE_LENGTH + 1) }, null],
    // The shape that made a form nobody could post: the request fits the server's limits.
    [
      'a state of 12,000 characters',
      { state: 'a'.repeat(12_000), redirect_uri: SPA_REDIRECT, scope: 'api' },
      null,
    ],
    ['a state with a control character', { state: 'a\u0001b' }, null],
    ['a state beyond ASCII', { state: 'zurück' }, null],
    ['a scope one character too long', { scope: `api ${'a'.repeat(MAX_SCOPE_LENGTH)}` }, 'state-of-the-app'],
  ] as const) {
    test(`${name}: invalid_request back to the app before any form`, async () => {
      const page = await openAuthorization(server.url, query(pkce().challenge, overrides));
      assert.equal(page.status, 303, page.html);
      assert.doesNotMatch(page.html, /<form/);
      const parameters = redirectParameters(page.location);
      assert.equal(parameters.get('error'), 'invalid_request');
      assert.equal(parameters.get('state'), stateBack, 'a refused state is not handed back');
      assert.equal(parameters.get('code'), null);
    });
  }
});

describe('an expired authorization code', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { AUTHORIZATION_CODE_TTL: '1' } });
  });
  after(() => server.close());

  test('is invalid_grant after AUTHORIZATION_CODE_TTL', async () => {
    const superuser = await superuserToken(server.url);
    const spa = await registerClient(server.url, superuser, { name: 'spa', type: 'public' });
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(server.url, spa.name, challenge, {
      username: SEEDED_USER.username,
      password: SEEDED_USER.password,
    });
    await sleep(1100);
    const refused = await exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_grant');
  });
});

describe('an APP_URL other than the address the sign-in page is served at', () => {
  let server: TestServer;
  const logged: string[] = [];
  before(async () => {
    server = await startTestServer({ env: { APP_URL: ISSUER }, log: (line) => logged.push(line) });
  });
  after(() => server.close());

  test('refuses every sign-in, and the process log says so once, naming both origins', async () => {
    const superuser = await superuserToken(server.url);
    const spa = await registerClient(server.url, superuser, { name: 'spa', type: 'public' });
    const post = async (headers: Record<string, string>) => {
      const page = await openAuthorization(server.url, authorizationQuery(spa.name, pkce().challenge));
      const form = { csrf_token: csrfTokenOf(page.html), ...SEEDED_USER };
      const refused = await postSignIn(server.url, form, headers);
      assert.equal(refused.status, 403, refused.html);
      return form;
    };
    const start = logged.length;
    // Another site's post is an attack on the person, not a misconfiguration: nothing is logged.
    await post({ 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' });
    await post({ 'Sec-Fetch-Site': 'same-site', Origin: 'https://other.issuer.example.test' });
    assert.deepEqual(logged.slice(start), []);

    // The browser says the page that posted is of the same origin as the service: the service
    // is served at an address APP_URL does not name.
    const sameOrigin = { 'Sec-Fetch-Site': 'same-origin', Origin: server.url };
    const form = await post(sameOrigin);
    await post(sameOrigin);
    const lines = logged.slice(start);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.ok(lines[0]?.includes(server.url), lines[0]);
    assert.ok(lines[0]?.includes(ISSUER), lines[0]);
    assert.ok(!lines[0]?.includes(form.csrf_token) && !lines[0]?.includes(form.password), 'no secret logged');
  });
});
