import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BackendUnavailable } from '../../src/errors.ts';
import {
  ADMIN_CLIENT,
  decodeJwtPart,
  FRONTEND_CLIENT,
  passwordGrant,
  refreshGrant,
  request,
  SEEDED_USER,
} from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';

/** `late` is refused as reuse, and `newest`, the family's live token, refreshes no more: the family is revoked. */
async function assertReuseRevokes(url: string, late: string, newest: string): Promise<void> {
  const refused = await refreshGrant(url, FRONTEND_CLIENT, late);
  assert.equal(refused.status, 400);
  assert.equal(refused.body.detail, 'Refresh token already used');
  assert.equal((await refreshGrant(url, FRONTEND_CLIENT, newest)).status, 400, 'the family is revoked');
}

for (const backend of backends()) {
  describe(`refresh token grant (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    const login = () => passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);

    test('a refresh returns a new access token and a new refresh token', async () => {
      const first = await login();
      const response = await refreshGrant(server.url, FRONTEND_CLIENT, first.refresh_token);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.notEqual(response.body.access_token, first.access_token);
      assert.notEqual(response.body.refresh_token, first.refresh_token);
      const accessToken = String(response.body.access_token);
      const me = await request(server.url, 'GET', `/users/${decodeJwtPart(accessToken, 1).sub}`, {
        token: accessToken,
      });
      assert.equal(me.status, 200);
    });

    test('the new refresh token works again, many times in a row', async () => {
      let token = (await login()).refresh_token;
      for (let i = 0; i < 5; i++) {
        const response = await refreshGrant(server.url, FRONTEND_CLIENT, token);
        assert.equal(response.status, 200);
        token = String(response.body.refresh_token);
      }
    });

    test('a used refresh token presented again after its successor was used is refused and revokes its whole family', async () => {
      const first = await login();
      const second = await refreshGrant(server.url, FRONTEND_CLIENT, first.refresh_token);
      assert.equal(second.status, 200);
      const third = await refreshGrant(server.url, FRONTEND_CLIENT, String(second.body.refresh_token));
      assert.equal(third.status, 200);
      const replay = await refreshGrant(server.url, FRONTEND_CLIENT, first.refresh_token);
      assert.equal(replay.status, 400);
      assert.equal(replay.body.error, 'invalid_grant');
      // The legitimate holder's newest token is now revoked too (RFC 9700 §4.14.2).
      const newest = await refreshGrant(server.url, FRONTEND_CLIENT, String(third.body.refresh_token));
      assert.equal(newest.status, 400);
      assert.equal(newest.body.error, 'invalid_grant');
    });

    test('a refresh whose answer was lost: the retry with the same token gets the same refresh token and a new access token', async () => {
      const { refresh_token } = await login();
      const lost = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(lost.status, 200);
      const retry = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(retry.status, 200, JSON.stringify(retry.body));
      assert.equal(
        retry.body.refresh_token,
        lost.body.refresh_token,
        'nothing new is minted into the family',
      );
      assert.notEqual(retry.body.access_token, lost.body.access_token);
      const next = await refreshGrant(server.url, FRONTEND_CLIENT, String(retry.body.refresh_token));
      assert.equal(next.status, 200, JSON.stringify(next.body));
    });

    test('two tabs refreshing with one token at once: all succeed with the same refresh token', async () => {
      const { refresh_token } = await login();
      const results = await Promise.all(
        Array.from({ length: 8 }, () => refreshGrant(server.url, FRONTEND_CLIENT, refresh_token)),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        results.map(() => 200),
      );
      assert.equal(new Set(results.map((r) => r.body.refresh_token)).size, 1, 'one successor');
      assert.equal(new Set(results.map((r) => r.body.access_token)).size, 8, 'an access token each');
      const next = await refreshGrant(server.url, FRONTEND_CLIENT, String(results[0]?.body.refresh_token));
      assert.equal(next.status, 200);
    });

    test('the token just rotated, once its successor is used, is reuse: the family is revoked', async () => {
      const { refresh_token } = await login();
      const second = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      const third = await refreshGrant(server.url, FRONTEND_CLIENT, String(second.body.refresh_token));
      assert.equal(third.status, 200);
      await assertReuseRevokes(server.url, refresh_token, String(third.body.refresh_token));
    });

    test('the token just rotated, presented by another client, revokes the family', async () => {
      const { refresh_token } = await login();
      const second = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(second.status, 200);
      const stolen = await refreshGrant(server.url, ADMIN_CLIENT, refresh_token);
      assert.equal(stolen.status, 400);
      assert.equal(stolen.body.error, 'invalid_grant');
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token)).status, 400);
      assert.equal(
        (await refreshGrant(server.url, FRONTEND_CLIENT, String(second.body.refresh_token))).status,
        400,
      );
    });

    test('a forged token naming an older generation of a family is refused and revokes nothing', async () => {
      const first = await login();
      const second = await refreshGrant(server.url, FRONTEND_CLIENT, first.refresh_token);
      assert.equal(second.status, 200);
      const current = String(second.body.refresh_token);
      // Someone who knows the family id but not the key: generation 0, a made-up MAC.
      const [familyId, , keyId, secret] = current.split('.');
      const forged = [familyId, '0', keyId, secret, 'A'.repeat(22)].join('.');
      const refused = await refreshGrant(server.url, FRONTEND_CLIENT, forged);
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, 'invalid_grant');
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, current)).status, 200);
    });

    test('scope may be omitted on refresh: it is the scope originally granted (RFC 6749 §6)', async () => {
      const { refresh_token } = await login();
      const response = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', refresh_token, ...FRONTEND_CLIENT },
      });
      assert.equal(response.status, 200);
      assert.equal(decodeJwtPart(String(response.body.access_token), 1).scope, 'api');
    });

    test('a refresh token is bound to its client', async () => {
      const { refresh_token } = await login();
      const response = await refreshGrant(server.url, ADMIN_CLIENT, refresh_token);
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_grant');
    });

    test('an unknown or malformed refresh token is invalid_grant', async () => {
      for (const token of ['nonsense', `${'a'.repeat(22)}.${'b'.repeat(43)}`]) {
        const response = await refreshGrant(server.url, FRONTEND_CLIENT, token);
        assert.equal(response.status, 400);
        assert.equal(response.body.error, 'invalid_grant');
      }
    });

    test('a wrong scope is refused before the token is consumed', async () => {
      const { refresh_token } = await login();
      const wrong = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', scope: 'other', refresh_token, ...FRONTEND_CLIENT },
      });
      assert.equal(wrong.status, 400);
      assert.equal(wrong.body.detail, 'Invalid scope');
      const right = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(right.status, 200);
    });

    test('a refresh asking for more than was granted is refused and leaves the token usable', async () => {
      await server.app.stores.scopes.createIfAbsent({ name: 'other', description: 'A second scope' });
      const { refresh_token } = await login();
      const wider = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', scope: 'api other', refresh_token, ...FRONTEND_CLIENT },
      });
      assert.equal(wider.status, 400);
      assert.equal(wider.body.error, 'invalid_scope');
      const right = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(right.status, 200, JSON.stringify(right.body));
    });

    test('an account store outage during a refresh leaves the token usable for the retry', async () => {
      const { refresh_token } = await login();
      const users = server.app.stores.users;
      const findById = users.findById;
      users.findById = async () => {
        throw new BackendUnavailable('MongoDB');
      };
      try {
        const refused = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
        assert.equal(refused.status, 503);
      } finally {
        users.findById = findById;
      }
      const retry = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(retry.status, 200, JSON.stringify(retry.body));
    });

    test('a refresh token presented by another client stays revoked for its own client too', async () => {
      const { refresh_token } = await login();
      assert.equal((await refreshGrant(server.url, ADMIN_CLIENT, refresh_token)).status, 400);
      const own = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(own.status, 400);
      assert.equal(own.body.error, 'invalid_grant');
    });

    test('a wrong client secret is refused and leaves the refresh token usable', async () => {
      const { refresh_token } = await login();
      const wrong = await refreshGrant(
        server.url,
        { ...FRONTEND_CLIENT, client_secret: 'nope' },
        refresh_token,
      );
      assert.equal(wrong.status, 401);
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token)).status, 200);
    });

    test('a missing refresh_token is invalid_request', async () => {
      const response = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', scope: 'api', ...FRONTEND_CLIENT },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_request');
    });

    test('tokens verified against a password hash that has since changed are refused, without any revocation', async () => {
      // What a login racing a password change leaves behind: tokens stamped with the old hash.
      const tokens = await login();
      const account = await server.app.stores.users.findByIdentity(SEEDED_USER.username);
      assert.ok(account);
      await server.app.stores.users.update(account.id, { passwordHash: `${account.passwordHash}-changed` });
      try {
        const read = await request(server.url, 'GET', `/users/${account.id}`, { token: tokens.access_token });
        assert.equal(read.status, 401);
        assert.match(String(read.body.detail), /session has ended/);
        const refresh = await refreshGrant(server.url, FRONTEND_CLIENT, tokens.refresh_token);
        assert.equal(refresh.status, 400);
        assert.equal(refresh.body.error, 'invalid_grant');
      } finally {
        await server.app.stores.users.update(account.id, { passwordHash: account.passwordHash });
      }
    });

    test('an account deactivated since login cannot refresh', async () => {
      const { refresh_token } = await login();
      const account = await server.app.stores.users.findByIdentity(SEEDED_USER.username);
      assert.ok(account);
      await server.app.stores.users.update(account.id, { status: 'inactive' });
      try {
        const response = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
        assert.equal(response.status, 400);
        assert.equal(response.body.detail, 'Invalid credentials');
      } finally {
        await server.app.stores.users.update(account.id, { status: 'active' });
      }
    });
  });

  describe(`refresh token retry window (${backend})`, () => {
    let server: TestServer;
    let strict: TestServer;
    before(async () => {
      server = await startTestServer({ backend, env: { REFRESH_TOKEN_RETRY_SECONDS: '1' } });
      strict = await startTestServer({ backend, env: { REFRESH_TOKEN_RETRY_SECONDS: '0' } });
    });
    after(() => Promise.all([server.close(), strict.close()]));

    test('after REFRESH_TOKEN_RETRY_SECONDS, the token just rotated is reuse: the family is revoked', async () => {
      const { refresh_token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
      const second = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(second.status, 200);
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await assertReuseRevokes(server.url, refresh_token, String(second.body.refresh_token));
    });

    test('with REFRESH_TOKEN_RETRY_SECONDS=0 every token that comes back is reuse, a retry at once too', async () => {
      const { refresh_token } = await passwordGrant(strict.url, FRONTEND_CLIENT, SEEDED_USER);
      const second = await refreshGrant(strict.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(second.status, 200);
      await assertReuseRevokes(strict.url, refresh_token, String(second.body.refresh_token));
    });
  });

  describe(`refresh token lifetime (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, env: { REFRESH_TOKEN_TTL: '1' } });
    });
    after(() => server.close());

    test('an expired refresh token is refused: the client must log in again', async () => {
      const { refresh_token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const response = await refreshGrant(server.url, FRONTEND_CLIENT, refresh_token);
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_grant');
      assert.equal((await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).token_type, 'Bearer');
    });
  });
}
