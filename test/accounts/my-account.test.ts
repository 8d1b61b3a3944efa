import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_CLIENT, FRONTEND_CLIENT, refreshGrant, request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import {
  adminLogin,
  canUserLogin,
  PASSWORD,
  registerAndActivate,
  storeAccount,
  userLogin,
} from './fixtures.ts';

for (const backend of backends()) {
  describe(`a user's own account: /users/my-account (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    async function newUser(identity: string) {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      return { account, tokens: await userLogin(server.url, identity) };
    }

    test('GET answers the caller\'s own account as HAL; "my-account" is not taken for an id', async () => {
      const { account, tokens } = await newUser('me@example.com');
      const response = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/hal+json');
      assert.equal(response.body.id, account.id);
      assert.equal(response.body.identity, 'me@example.com');
      assert.deepEqual(response.body._links, { self: { href: `/users/${account.id}` } });
      assert.ok(!('passwordHash' in response.body));
      // An admin reaches the my-account route too (and is refused there), not `/users/:id` with 404.
      const admin = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      const asAdmin = await request(server.url, 'GET', '/users/my-account', { token: admin.access_token });
      assert.equal(asAdmin.status, 403);
      assert.equal(
        (await request(server.url, 'GET', '/users/not-a-uuid', { token: admin.access_token })).status,
        404,
      );
      assert.equal(
        (await request(server.url, 'GET', '/users/not-a-uuid', { token: tokens.access_token })).status,
        404,
      );
      assert.equal(
        (await request(server.url, 'PUT', '/users/my-account', { token: tokens.access_token })).status,
        405,
      );
    });

    test('PATCH changes the names (trimmed; null or empty clears) and nothing else', async () => {
      const { tokens } = await newUser('names@example.com');
      const token = tokens.access_token;
      const changed = await request(server.url, 'PATCH', '/users/my-account', {
        token,
        json: { firstName: '  Grace ', lastName: 'Hopper' },
      });
      assert.equal(changed.status, 200);
      assert.equal(changed.body.firstName, 'Grace');
      assert.equal(changed.body.lastName, 'Hopper');
      const cleared = await request(server.url, 'PATCH', '/users/my-account', {
        token,
        json: { firstName: null, lastName: '' },
      });
      assert.equal(cleared.body.firstName, null);
      assert.equal(cleared.body.lastName, null);
      for (const json of [{ status: 'inactive' }, { identity: 'other@example.com' }, { roles: ['admin'] }]) {
        const refused = await request(server.url, 'PATCH', '/users/my-account', { token, json });
        assert.equal(refused.status, 400, JSON.stringify(json));
        assert.deepEqual(Object.keys(refused.body.errors as object), Object.keys(json));
      }
      const tooLong = await request(server.url, 'PATCH', '/users/my-account', {
        token,
        json: { lastName: 'x'.repeat(101) },
      });
      assert.equal(tooLong.status, 400);
      assert.ok((tooLong.body.errors as Record<string, unknown>).lastName);
    });

    test('a password change needs the current password; a wrong one is 400 with errors.currentPassword', async () => {
      const { tokens } = await newUser('pw@example.com');
      const token = tokens.access_token;
      const change = (json: Record<string, unknown>) =>
        request(server.url, 'PATCH', '/users/my-account', { token, json });
      const missing = await change({ password: 'new password!', passwordConfirm: 'new password!' });
      assert.equal(missing.status, 400);
      assert.ok((missing.body.errors as Record<string, unknown>).currentPassword);
      const wrong = await change({
        currentPassword: 'not the password',
        password: 'new password!',
        passwordConfirm: 'new password!',
      });
      assert.equal(wrong.status, 400);
      assert.deepEqual(wrong.body.errors, { currentPassword: ['Is not the current password'] });
      const mismatch = await change({
        currentPassword: PASSWORD,
        password: 'new password!',
        passwordConfirm: 'new password?',
      });
      assert.equal(mismatch.status, 400);
      assert.ok((mismatch.body.errors as Record<string, unknown>).passwordConfirm);
      const short = await change({ currentPassword: PASSWORD, password: 'short', passwordConfirm: 'short' });
      assert.equal(short.status, 400);
      assert.ok((short.body.errors as Record<string, unknown>).password);
      assert.ok(await canUserLogin(server.url, 'pw@example.com'), 'nothing changed so far');
    });

    test('a password change revokes every refresh token of the account', async () => {
      const { tokens } = await newUser('rotate@example.com');
      const other = await userLogin(server.url, 'rotate@example.com');
      const response = await request(server.url, 'PATCH', '/users/my-account', {
        token: tokens.access_token,
        json: {
          currentPassword: PASSWORD,
          password: 'the new password',
          passwordConfirm: 'the new password',
        },
      });
      assert.equal(response.status, 200);
      for (const refresh of [tokens.refresh_token, other.refresh_token]) {
        const refreshed = await refreshGrant(server.url, FRONTEND_CLIENT, refresh);
        assert.equal(refreshed.status, 400);
        assert.equal(refreshed.body.error, 'invalid_grant');
      }
      assert.equal(await canUserLogin(server.url, 'rotate@example.com', PASSWORD), false);
      assert.ok(await canUserLogin(server.url, 'rotate@example.com', 'the new password'));
    });

    test('DELETE anonymises the account and refuses its tokens at once; the address can register again', async () => {
      const identity = 'leaving@example.com';
      const id = await registerAndActivate(server, identity);
      const tokens = await userLogin(server.url, identity);
      const response = await request(server.url, 'DELETE', '/users/my-account', {
        token: tokens.access_token,
        json: { currentPassword: PASSWORD },
      });
      assert.equal(response.status, 204);
      const after = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
      assert.equal(after.status, 401, 'the unexpired access token is refused');
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, tokens.refresh_token)).status, 400);
      assert.equal(await canUserLogin(server.url, identity), false);
      const stored = await server.app.stores.users.findById(id);
      assert.equal(stored?.identity, `deleted-${id}@invalid`);
      assert.equal(stored?.status, 'deleted');
      assert.equal(stored?.firstName, null);
      assert.equal(await server.app.passwords.verify(PASSWORD, stored?.passwordHash ?? ''), false);
      const again = await request(server.url, 'POST', '/account/register', {
        json: { identity, password: PASSWORD, passwordConfirm: PASSWORD },
      });
      assert.equal(again.status, 201);
    });
  });

  describe(`deleting one's own user account needs the password (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    test('without currentPassword, or with a wrong one, DELETE is 400 and the account stays as it was', async () => {
      const identity = 'keeping@example.com';
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      const tokens = await userLogin(server.url, identity);
      const remove = (options: { json?: unknown; raw?: string }) =>
        request(server.url, 'DELETE', '/users/my-account', { token: tokens.access_token, ...options });
      const noBody = await remove({});
      assert.equal(noBody.status, 400);
      assert.equal(noBody.headers.get('content-type'), 'application/problem+json');
      for (const json of [{}, { currentPassword: '' }]) {
        const missing = await remove({ json });
        assert.equal(missing.status, 400, JSON.stringify(json));
        assert.deepEqual(Object.keys(missing.body.errors as object), ['currentPassword']);
      }
      const wrong = await remove({ json: { currentPassword: 'not the password' } });
      assert.equal(wrong.status, 400);
      assert.equal(wrong.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(wrong.body.errors, { currentPassword: ['Is not the current password'] });

      assert.deepEqual(await server.app.stores.users.findById(account.id), account, 'nothing changed');
      const own = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
      assert.equal(own.status, 200, 'the session goes on');
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, tokens.refresh_token)).status, 200);
      assert.ok(await canUserLogin(server.url, identity));
    });
  });

  describe(`an admin's own account: /admins/my-account (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    test('GET and PATCH: names, and the password with the current one (which ends the other sessions)', async () => {
      const identity = 'operator';
      const account = await storeAccount(server.app.stores.admins, (p) => server.app.passwords.hash(p), {
        identity,
        roles: ['admin'],
      });
      const tokens = await adminLogin(server.url, identity);
      const token = tokens.access_token;
      const own = await request(server.url, 'GET', '/admins/my-account', { token });
      assert.equal(own.status, 200);
      assert.equal(own.body.id, account.id);
      assert.deepEqual(own.body.roles, ['admin']);
      assert.deepEqual(own.body._links, { self: { href: `/admins/${account.id}` } });

      const named = await request(server.url, 'PATCH', '/admins/my-account', {
        token,
        json: { firstName: 'Op' },
      });
      assert.equal(named.status, 200);
      assert.equal(named.body.firstName, 'Op');
      const promote = await request(server.url, 'PATCH', '/admins/my-account', {
        token,
        json: { roles: ['superuser'] },
      });
      assert.equal(promote.status, 400, "roles are not part of one's own profile");

      const wrong = await request(server.url, 'PATCH', '/admins/my-account', {
        token,
        json: {
          currentPassword: 'nope nope',
          password: 'operator password 2',
          passwordConfirm: 'operator password 2',
        },
      });
      assert.equal(wrong.status, 400);
      assert.ok((wrong.body.errors as Record<string, unknown>).currentPassword);
      const changed = await request(server.url, 'PATCH', '/admins/my-account', {
        token,
        json: {
          currentPassword: PASSWORD,
          password: 'operator password 2',
          passwordConfirm: 'operator password 2',
        },
      });
      assert.equal(changed.status, 200);
      assert.equal((await refreshGrant(server.url, ADMIN_CLIENT, tokens.refresh_token)).status, 400);
      await adminLogin(server.url, identity, 'operator password 2');
    });
  });
}
