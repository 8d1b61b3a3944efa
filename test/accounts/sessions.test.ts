/**
 * Ending sessions: deactivation, deletion and every credential change end every access and
 * refresh token issued before them, for good (a later reactivation revives none of them),
 * while a change that is no credential leaves sessions alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AccountKind } from '../../src/accounts/model.ts';
import { credentialStamp } from '../../src/accounts/sessions.ts';
import {
  ADMIN_CLIENT,
  FRONTEND_CLIENT,
  refreshGrant,
  request,
  SEEDED_ADMIN,
  type Tokens,
} from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { failsOnce } from '../support/stores.ts';
import { adminLogin, canUserLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

for (const backend of backends()) {
  describe(`ending sessions (${backend})`, () => {
    let server: TestServer;
    let superToken: string;
    before(async () => {
      server = await startTestServer({ backend });
      superToken = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
    });
    after(() => server.close());

    let seq = 0;
    /** A fresh account of the kind, signed in once; `manage` is where an admin changes it. */
    async function signedIn(kind: AccountKind) {
      const identity = kind === 'user' ? `session-${++seq}@example.com` : `session-admin-${++seq}`;
      const store = kind === 'user' ? server.app.stores.users : server.app.stores.admins;
      const account = await storeAccount(store, (p) => server.app.passwords.hash(p), {
        identity,
        roles: kind === 'user' ? [] : ['admin'],
      });
      const login = (password = PASSWORD) =>
        kind === 'user'
          ? userLogin(server.url, identity, password)
          : adminLogin(server.url, identity, password);
      return {
        identity,
        login,
        tokens: await login(),
        manage: `/${kind}s/${account.id}`,
        ownPath: `/${kind}s/my-account`,
        client: kind === 'user' ? FRONTEND_CLIENT : ADMIN_CLIENT,
      };
    }

    const change = async (path: string, json: unknown) => {
      const response = await request(server.url, 'PATCH', path, { token: superToken, json });
      assert.equal(response.status, 200, JSON.stringify(response.body));
    };

    /** Both tokens of the session are refused: the access token 401 invalid_token, the refresh token invalid_grant. */
    async function assertEnded(
      session: Awaited<ReturnType<typeof signedIn>>,
      tokens: Tokens = session.tokens,
    ) {
      const me = await request(server.url, 'GET', session.ownPath, { token: tokens.access_token });
      assert.equal(me.status, 401, 'the old access token is refused');
      assert.equal(me.body.error, 'invalid_token');
      assert.match(String(me.headers.get('www-authenticate')), /error="invalid_token"/);
      const refreshed = await refreshGrant(server.url, session.client, tokens.refresh_token);
      assert.equal(refreshed.status, 400, 'the old refresh token is refused');
      assert.equal(refreshed.body.error, 'invalid_grant');
    }

    async function assertLive(session: Awaited<ReturnType<typeof signedIn>>, tokens: Tokens) {
      const me = await request(server.url, 'GET', session.ownPath, { token: tokens.access_token });
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.equal((await refreshGrant(server.url, session.client, tokens.refresh_token)).status, 200);
    }

    for (const kind of ['user', 'admin'] as const) {
      test(`${kind}: deactivate, then reactivate: the old tokens stay refused, a new login works`, async () => {
        const session = await signedIn(kind);
        await change(session.manage, { status: 'inactive' });
        await change(session.manage, { status: 'active' });
        await assertEnded(session);
        await assertLive(session, await session.login());
      });

      test(`${kind}: a password change by an admin ends the earlier sessions`, async () => {
        const session = await signedIn(kind);
        await change(session.manage, { password: 'chosen by an admin' });
        await assertEnded(session);
        await assertLive(session, await session.login('chosen by an admin'));
      });

      test(`${kind}: an identity change ends the earlier sessions`, async () => {
        const session = await signedIn(kind);
        const identity = kind === 'user' ? `renamed-${++seq}@example.com` : `renamed-${++seq}`;
        await change(session.manage, { identity });
        await assertEnded(session);
        await assertLive(
          session,
          await (kind === 'user' ? userLogin(server.url, identity) : adminLogin(server.url, identity)),
        );
      });

      test(`${kind}: a change of names leaves the sessions alone`, async () => {
        const session = await signedIn(kind);
        await change(session.manage, { firstName: 'Still', lastName: 'Here' });
        await assertLive(session, session.tokens);
      });
    }

    test('user: reactivated through POST /users/{id}/activate, the old tokens stay refused', async () => {
      const session = await signedIn('user');
      await change(session.manage, { status: 'inactive' });
      const activated = await request(server.url, 'POST', `${session.manage}/activate`, {
        token: superToken,
      });
      assert.equal(activated.status, 200);
      await assertEnded(session);
      await assertLive(session, await session.login());
    });

    test('a refresh after the session ended does not bring it back, nor does a rotated token', async () => {
      const session = await signedIn('user');
      const rotated = await refreshGrant(server.url, session.client, session.tokens.refresh_token);
      assert.equal(rotated.status, 200);
      const next = rotated.body as unknown as Tokens;
      await change(session.manage, { status: 'inactive' });
      await change(session.manage, { status: 'active' });
      await assertEnded(session, next);
    });

    test('an own password change ends every session of the account, after reactivation too', async () => {
      const session = await signedIn('user');
      const other = await session.login();
      const response = await request(server.url, 'PATCH', session.ownPath, {
        token: session.tokens.access_token,
        json: { currentPassword: PASSWORD, password: 'my own new one', passwordConfirm: 'my own new one' },
      });
      assert.equal(response.status, 200);
      await assertEnded(session);
      await assertEnded(session, other);
      await change(session.manage, { status: 'inactive' });
      await change(session.manage, { status: 'active' });
      await assertEnded(session, other);
      await assertLive(session, await session.login('my own new one'));
    });

    test('a password change whose revocation of refresh tokens fails still ends the sessions: the account is written first', async () => {
      const session = await signedIn('user');
      failsOnce(server.app.stores.refreshTokens, 'revokeSubject');
      const response = await request(server.url, 'PATCH', session.ownPath, {
        token: session.tokens.access_token,
        json: {
          currentPassword: PASSWORD,
          password: 'changed despite it',
          passwordConfirm: 'changed despite it',
        },
      });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      await assertEnded(session);
      assert.equal(await canUserLogin(server.url, session.identity), false, 'the old password is over');
      await assertLive(session, await session.login('changed despite it'));
    });
  });
}

describe('the credential stamp', () => {
  const passwordHash = '$2b$10$abcdefghijklmnopqrstuuD0ZgzEcoOv6tBNNT9GCvsQ4Ux9mJVEa';

  test('without a session key it is what tokens issued before session keys carry', () => {
    // The first 22 base64url characters of the SHA-256 of the hash: unexpired tokens of
    // accounts stored before session keys existed stay valid after the upgrade.
    assert.equal(credentialStamp({ passwordHash, sessionKey: '' }), 'uLX3JtS9VEqBJCiKkFSHd_');
  });

  test('a new session key or a new hash is a new stamp', () => {
    const stamps = new Set([
      credentialStamp({ passwordHash, sessionKey: '' }),
      credentialStamp({ passwordHash, sessionKey: 'key-one' }),
      credentialStamp({ passwordHash, sessionKey: 'key-two' }),
      credentialStamp({ passwordHash: `${passwordHash}x`, sessionKey: 'key-one' }),
    ]);
    assert.equal(stamps.size, 4);
  });
});
