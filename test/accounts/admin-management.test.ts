import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_CLIENT, refreshGrant, request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin, PASSWORD, storeAccount } from './fixtures.ts';

for (const backend of backends()) {
  describe(`administrator accounts (${backend})`, () => {
    let server: TestServer;
    let superToken: string;
    let seededAdminId: string;
    before(async () => {
      server = await startTestServer({ backend });
      const tokens = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      superToken = tokens.access_token;
      seededAdminId = String(
        (await request(server.url, 'GET', '/admins/my-account', { token: superToken })).body.id,
      );
    });
    after(() => server.close());

    const hash = (password: string) => server.app.passwords.hash(password);
    async function plainAdmin(identity: string) {
      const account = await storeAccount(server.app.stores.admins, hash, { identity, roles: ['admin'] });
      return { account, token: (await adminLogin(server.url, identity)).access_token };
    }

    test('GET /admins lists administrators under _embedded.admins', async () => {
      const response = await request(server.url, 'GET', '/admins?sort=identity', { token: superToken });
      assert.equal(response.status, 200);
      const admins = (response.body._embedded as { admins: { identity: string; roles: string[] }[] }).admins;
      assert.ok(admins.some((a) => a.identity === SEEDED_ADMIN.username && a.roles.includes('superuser')));
      assert.equal(response.body.total, admins.length);
      assert.equal(
        (await request(server.url, 'GET', '/admins?limit=500', { token: superToken })).status,
        400,
      );
    });

    test('a superuser creates admins (roles default to [admin]); identity rules and duplicates', async () => {
      const created = await request(server.url, 'POST', '/admins', {
        token: superToken,
        json: { identity: 'ops.team', password: PASSWORD, passwordConfirm: PASSWORD, lastName: 'Ops' },
      });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('location'), `/admins/${created.body.id}`);
      assert.deepEqual(created.body.roles, ['admin']);
      assert.equal(created.body.status, 'active');
      await adminLogin(server.url, 'ops.team');
      assert.equal(
        (
          await request(server.url, 'POST', '/admins', {
            token: superToken,
            json: { identity: 'admin', password: PASSWORD },
          })
        ).status,
        409,
      );
      for (const [json, field] of [
        [{ identity: 'has space', password: PASSWORD }, 'identity'],
        [{ identity: '', password: PASSWORD }, 'identity'],
        [{ identity: 'shorty', password: 'short' }, 'password'],
        [{ identity: 'same-as-pw', password: 'same-as-pw' }, 'password'],
        [{ identity: 'roles', password: PASSWORD, roles: ['root'] }, 'roles'],
        [{ identity: 'roles2', password: PASSWORD, roles: [] }, 'roles'],
      ] as const) {
        const response = await request(server.url, 'POST', '/admins', { token: superToken, json });
        assert.equal(response.status, 400, JSON.stringify(json));
        const fields = Object.keys(response.body.errors as object);
        assert.ok(
          fields.some((name) => name === field || name.startsWith(`${field}.`)),
          JSON.stringify(response.body),
        );
      }
    });

    test('a plain admin changes plain admins, but not superusers, roles, or their own password without the current one', async () => {
      const actor = await plainAdmin('plain-actor');
      const other = await plainAdmin('plain-other');
      const token = actor.token;
      const renamed = await request(server.url, 'PATCH', `/admins/${other.account.id}`, {
        token,
        json: { firstName: 'Other', status: 'inactive' },
      });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.status, 'inactive');
      const onSuperuser = await request(server.url, 'PATCH', `/admins/${seededAdminId}`, {
        token,
        json: { firstName: 'Hijack' },
      });
      assert.equal(onSuperuser.status, 403);
      const promote = await request(server.url, 'PATCH', `/admins/${actor.account.id}`, {
        token,
        json: { roles: ['superuser'] },
      });
      assert.equal(promote.status, 403);
      const ownPassword = await request(server.url, 'PATCH', `/admins/${actor.account.id}`, {
        token,
        json: { password: 'a password of my own' },
      });
      assert.equal(ownPassword.status, 403);
      assert.equal(
        (await request(server.url, 'GET', `/admins/${seededAdminId}`, { token })).status,
        200,
        'but any admin may read any admin',
      );
      assert.equal((await request(server.url, 'GET', '/admins/not-a-uuid', { token })).status, 404);
    });

    test('a superuser changes roles; a password change ends the sessions of that admin', async () => {
      const target = await plainAdmin('to-promote');
      const session = await adminLogin(server.url, 'to-promote');
      const promoted = await request(server.url, 'PATCH', `/admins/${target.account.id}`, {
        token: superToken,
        json: { roles: ['admin', 'superuser'], password: 'another password' },
      });
      assert.equal(promoted.status, 200);
      assert.deepEqual(promoted.body.roles, ['admin', 'superuser']);
      assert.equal((await refreshGrant(server.url, ADMIN_CLIENT, session.refresh_token)).status, 400);
      const token = (await adminLogin(server.url, 'to-promote', 'another password')).access_token;
      assert.equal(
        (
          await request(server.url, 'POST', '/admins', {
            token,
            json: { identity: 'by-new-super', password: PASSWORD },
          })
        ).status,
        201,
      );
    });

    test('DELETE /admins/{id} anonymises the admin and refuses its tokens at once', async () => {
      const target = await plainAdmin('short-lived');
      const response = await request(server.url, 'DELETE', `/admins/${target.account.id}`, {
        token: superToken,
      });
      assert.equal(response.status, 204);
      assert.equal(
        (await request(server.url, 'GET', '/admins/my-account', { token: target.token })).status,
        401,
      );
      const record = await request(server.url, 'GET', `/admins/${target.account.id}`, { token: superToken });
      assert.equal(record.body.identity, `deleted-${target.account.id}@invalid`);
      assert.equal(record.body.status, 'deleted');
      assert.deepEqual(record.body.roles, []);
      assert.equal(
        (await request(server.url, 'DELETE', `/admins/${target.account.id}`, { token: superToken })).status,
        404,
      );
    });
  });

  describe(`the last active superuser (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    test('cannot be deleted, demoted or deactivated (409) until another superuser exists', async () => {
      const token = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
      const self = await request(server.url, 'GET', '/admins/my-account', { token });
      const path = `/admins/${self.body.id}`;
      // The other superuser is inactive, so it does not count.
      await storeAccount(server.app.stores.admins, (p) => server.app.passwords.hash(p), {
        identity: 'dormant',
        roles: ['superuser'],
        status: 'inactive',
      });
      for (const [method, json] of [
        ['DELETE', undefined],
        ['PATCH', { roles: ['admin'] }],
        ['PATCH', { status: 'inactive' }],
      ] as const) {
        const response = await request(server.url, method, path, { token, json });
        assert.equal(response.status, 409, `${method} ${JSON.stringify(json)}`);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        assert.match(String(response.body.detail), /last active superuser/);
      }
      const renamed = await request(server.url, 'PATCH', path, { token, json: { firstName: 'Still' } });
      assert.equal(renamed.status, 200, 'other changes are fine');

      const second = await request(server.url, 'POST', '/admins', {
        token,
        json: { identity: 'second-super', password: PASSWORD, roles: ['superuser'] },
      });
      assert.equal(second.status, 201);
      assert.equal((await request(server.url, 'DELETE', path, { token })).status, 204);
      const secondToken = (await adminLogin(server.url, 'second-super')).access_token;
      const lastOne = await request(server.url, 'DELETE', `/admins/${second.body.id}`, {
        token: secondToken,
      });
      assert.equal(lastOne.status, 409);
    });
  });
}
