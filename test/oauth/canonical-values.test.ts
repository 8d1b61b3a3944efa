/**
 * Every opaque value the service hands out in base64url is taken back only as it was spelt:
 * another spelling of the same bytes (RFC 4648 §3.5: the unused bits of the last character
 * set) is the invalid value it is, and refusing it uses nothing up.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  authorizationCode,
  authorizationQuery,
  csrfTokenOf,
  exchangeCode,
  openAuthorization,
  pkce,
  postSignIn,
  type RegisteredClient,
  registerClient,
  superuserToken,
} from '../support/authorization.ts';
import { respelled } from '../support/base64url.ts';
import { FRONTEND_CLIENT, passwordGrant, refreshGrant, request, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

describeBackendSkip();

for (const backend of backends()) {
  describe(`opaque values have one spelling (${backend})`, () => {
    let server: TestServer;
    let spa: RegisteredClient;
    before(async () => {
      server = await startTestServer({ backend });
      spa = await registerClient(server.url, await superuserToken(server.url), {
        name: `spa-${randomUUID()}`,
        type: 'public',
      });
    });
    after(() => server.close());

    test('an access token whose signature is spelt otherwise is refused (401)', async () => {
      const { access_token: token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
      const other = respelled(token);
      const refused = await request(server.url, 'GET', '/users/my-account', { token: other });
      assert.equal(refused.status, 401);
      assert.match(String(refused.headers.get('www-authenticate')), /invalid_token/);
      assert.equal((await request(server.url, 'GET', '/users/my-account', { token })).status, 200);
    });

    test('a refresh token spelt otherwise, in any part, is invalid_grant, and the token still works', async () => {
      const { refresh_token: token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
      const parts = token.split('.');
      // The family id, the secret and the MAC: base64url of 16, 32 and 16 bytes.
      for (const index of [0, 3, 4]) {
        const other = parts.map((part, at) => (at === index ? respelled(part) : part)).join('.');
        const refused = await refreshGrant(server.url, FRONTEND_CLIENT, other);
        assert.equal(refused.status, 400, `part ${index}`);
        assert.equal(refused.body.error, 'invalid_grant', `part ${index}`);
      }
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, token)).status, 200);
    });

    test('a sign-in form value spelt otherwise is refused, and the form still works', async () => {
      const { challenge } = pkce();
      const page = await openAuthorization(server.url, authorizationQuery(spa.name, challenge));
      const seal = csrfTokenOf(page.html);
      const refused = await postSignIn(server.url, { csrf_token: respelled(seal), ...SEEDED_USER });
      assert.notEqual(refused.status, 303, 'not signed in');
      assert.equal(refused.location, null);
      const signedIn = await postSignIn(server.url, { csrf_token: seal, ...SEEDED_USER });
      assert.equal(signedIn.status, 303, signedIn.html);
    });

    test('an authorization code spelt otherwise is invalid_grant, and the code still works', async () => {
      const { verifier, challenge } = pkce();
      const code = await authorizationCode(server.url, spa.name, challenge, SEEDED_USER);
      const refused = await exchangeCode(server.url, {
        client_id: spa.name,
        code: respelled(code),
        code_verifier: verifier,
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, 'invalid_grant');
      const exchanged = await exchangeCode(server.url, {
        client_id: spa.name,
        code,
        code_verifier: verifier,
      });
      assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    });

    test('a mailed link whose hash is spelt otherwise is 404, and the link still works', async () => {
      const asked = await request(server.url, 'POST', '/account/reset-password', {
        json: { email: SEEDED_USER.username },
      });
      assert.equal(asked.status, 200);
      const link = linkIn(
        lastMailTo(await readMailDir(server.logDir), SEEDED_USER.username).parsed,
        '/account/reset-password/',
      );
      const other = `/account/reset-password/${respelled(link.hash)}`;
      assert.equal((await request(server.url, 'GET', other)).status, 404);
      assert.equal((await request(server.url, 'GET', link.path)).status, 200);
    });
  });
}
