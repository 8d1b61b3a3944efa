import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FRONTEND_CLIENT, refreshGrant, request, SEEDED_ADMIN, SEEDED_USER } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin, canUserLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

type Page = {
  _embedded: {
    users: { id: string; identity: string; status: string; _links: { self: { href: string } } }[];
  };
  page: number;
  limit: number;
  total: number;
  _links: Record<string, { href: string } | undefined>;
};

for (const backend of backends()) {
  describe(`admins manage user accounts (${backend})`, () => {
    let server: TestServer;
    let token: string;
    before(async () => {
      server = await startTestServer({ backend });
      token = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
      const hash = (password: string) => server.app.passwords.hash(password);
      // 24 more users next to the seeded one: 25 in all, 5 of them pending.
      for (let i = 0; i < 24; i++) {
        await storeAccount(server.app.stores.users, hash, {
          identity: `list-${String(i).padStart(2, '0')}@example.com`,
          status: i % 5 === 0 ? 'pending' : 'active',
        });
      }
    });
    after(() => server.close());

    const get = async (path: string) => request(server.url, 'GET', path, { token });

    test('GET /users is a HAL collection: 20 per page by default, with first/next/last links', async () => {
      const response = await get('/users');
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/hal+json');
      const page = response.body as unknown as Page;
      assert.equal(page.page, 1);
      assert.equal(page.limit, 20);
      assert.equal(page.total, 25);
      assert.equal(page._embedded.users.length, 20);
      assert.deepEqual(Object.keys(page._links).sort(), ['first', 'last', 'next', 'self']);
      assert.equal(page._links.next?.href, '/users?page=2&limit=20');
      assert.equal(page._links.last?.href, '/users?page=2&limit=20');
      const user = page._embedded.users[0];
      assert.equal(user?._links.self.href, `/users/${user?.id}`);
      assert.ok(!JSON.stringify(page).includes('passwordHash'));
    });

    test('pages, a status filter and sorting (ascending or with "-" descending)', async () => {
      const second = (await get('/users?limit=10&page=2&sort=identity')).body as unknown as Page;
      assert.equal(second._embedded.users.length, 10);
      assert.equal(second._links.prev?.href, '/users?limit=10&page=1&sort=identity');
      assert.equal(second._links.next?.href, '/users?limit=10&page=3&sort=identity');
      const identities = second._embedded.users.map((u) => u.identity);
      assert.deepEqual(identities, [...identities].sort());
      const descending = (await get('/users?sort=-identity&limit=3')).body as unknown as Page;
      assert.deepEqual(
        descending._embedded.users.map((u) => u.identity),
        [SEEDED_USER.username, 'list-23@example.com', 'list-22@example.com'],
      );
      const pending = (await get('/users?status=pending&limit=100')).body as unknown as Page;
      assert.equal(pending.total, 5);
      assert.ok(pending._embedded.users.every((u) => u.status === 'pending'));
      const beyond = (await get('/users?page=9')).body as unknown as Page;
      assert.deepEqual(beyond._embedded.users, []);
      assert.equal(beyond.total, 25);
    });

    test('bad query values are 400 problems naming each parameter', async () => {
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=ten', 'limit'],
        ['page=0', 'page'],
        ['page=-1', 'page'],
        ['status=gone', 'status'],
        ['sort=password', 'sort'],
        ['sort=--identity', 'sort'],
        ['colour=blue', 'colour'],
        ['page=1&page=2', 'page'],
      ]) {
        const response = await get(`/users?${query}`);
        assert.equal(response.status, 400, query);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        assert.ok(
          (response.body.errors as Record<string, unknown>)[field as string],
          `${query}: ${JSON.stringify(response.body)}`,
        );
      }
    });

    test('POST /users creates an account (active by default): 201 with Location; it can sign in', async () => {
      const response = await request(server.url, 'POST', '/users', {
        token,
        json: { identity: 'made@example.com', password: PASSWORD, firstName: 'Made' },
      });
      assert.equal(response.status, 201);
      assert.equal(response.headers.get('location'), `/users/${response.body.id}`);
      assert.equal(response.body.status, 'active');
      assert.deepEqual(response.body.roles, []);
      assert.ok(await canUserLogin(server.url, 'made@example.com'));
      const pending = await request(server.url, 'POST', '/users', {
        token,
        json: { identity: 'made-pending@example.com', password: PASSWORD, status: 'pending' },
      });
      assert.equal(pending.body.status, 'pending');
      const duplicate = await request(server.url, 'POST', '/users', {
        token,
        json: { identity: 'MADE@example.com', password: PASSWORD },
      });
      assert.equal(duplicate.status, 409);
      for (const [json, field] of [
        [{ identity: 'made', password: PASSWORD }, 'identity'],
        [{ identity: 'x@example.com', password: 'short' }, 'password'],
        [
          { identity: 'y@example.com', password: PASSWORD, passwordConfirm: 'other password' },
          'passwordConfirm',
        ],
        [{ identity: 'z@example.com', password: PASSWORD, status: 'deleted' }, 'status'],
      ] as const) {
        const invalid = await request(server.url, 'POST', '/users', { token, json });
        assert.equal(invalid.status, 400, JSON.stringify(json));
        assert.ok((invalid.body.errors as Record<string, unknown>)[field]);
      }
    });

    test('GET /users/{id}: any user for an admin; not-a-uuid and unknown ids are 404', async () => {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: 'read@example.com',
      });
      const found = await get(`/users/${account.id}`);
      assert.equal(found.status, 200);
      assert.equal(found.body.identity, 'read@example.com');
      assert.equal((await get('/users/not-a-uuid')).status, 404);
      assert.equal((await get('/users/00000000-0000-4000-8000-000000000000')).status, 404);
    });

    test('PATCH /users/{id}: names, identity, status and password; deactivation and password changes end sessions', async () => {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: 'patch@example.com',
      });
      const path = `/users/${account.id}`;
      const patch = (json: unknown) => request(server.url, 'PATCH', path, { token, json });

      const renamed = await patch({ identity: 'patched@example.com', firstName: 'Pat' });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.identity, 'patched@example.com');
      assert.equal(renamed.body.firstName, 'Pat');
      assert.ok(await canUserLogin(server.url, 'patched@example.com'));
      assert.equal((await patch({ identity: SEEDED_USER.username })).status, 409);
      assert.equal((await patch({ identity: 'not an address' })).status, 400);
      assert.equal((await patch({ status: 'deleted' })).status, 400);
      assert.equal((await patch({ passwordConfirm: 'orphan confirmation' })).status, 400);

      const session = await userLogin(server.url, 'patched@example.com');
      const newPassword = await patch({ password: 'set by an admin' });
      assert.equal(newPassword.status, 200);
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, session.refresh_token)).status, 400);
      assert.ok(await canUserLogin(server.url, 'patched@example.com', 'set by an admin'));

      const live = await userLogin(server.url, 'patched@example.com', 'set by an admin');
      const deactivated = await patch({ status: 'inactive' });
      assert.equal(deactivated.body.status, 'inactive');
      assert.equal(
        (await request(server.url, 'GET', '/users/my-account', { token: live.access_token })).status,
        401,
      );
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, live.refresh_token)).status, 400);
      assert.equal(await canUserLogin(server.url, 'patched@example.com', 'set by an admin'), false);

      const unknown = await request(server.url, 'PATCH', '/users/00000000-0000-4000-8000-000000000000', {
        token,
        json: { firstName: 'Nobody' },
      });
      assert.equal(unknown.status, 404);
    });

    test('DELETE /users/{id} anonymises (204), refuses its tokens, and a deleted account cannot be changed', async () => {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: 'gone@example.com',
      });
      await request(server.url, 'PATCH', `/users/${account.id}`, {
        token,
        json: { firstName: 'Gone', lastName: 'Soon' },
      });
      const session = await userLogin(server.url, 'gone@example.com');
      const response = await request(server.url, 'DELETE', `/users/${account.id}`, { token });
      assert.equal(response.status, 204);
      assert.equal(
        (await request(server.url, 'GET', '/users/my-account', { token: session.access_token })).status,
        401,
      );
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, session.refresh_token)).status, 400);
      const record = await get(`/users/${account.id}`);
      assert.equal(record.status, 200, 'an admin still sees the anonymised record');
      assert.equal(record.body.identity, `deleted-${account.id}@invalid`);
      assert.equal(record.body.status, 'deleted');
      assert.equal(record.body.firstName, null);
      assert.equal(record.body.lastName, null);
      assert.equal((await request(server.url, 'DELETE', `/users/${account.id}`, { token })).status, 404);
      assert.equal(
        (await request(server.url, 'PATCH', `/users/${account.id}`, { token, json: { status: 'active' } }))
          .status,
        404,
      );
      assert.equal(
        (await request(server.url, 'POST', `/users/${account.id}/activate`, { token })).status,
        404,
      );
      const deleted = (await get('/users?status=deleted')).body as unknown as Page;
      assert.ok(deleted._embedded.users.some((u) => u.id === account.id));
    });

    test('POST /users/{id}/activate activates a pending account', async () => {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: 'waiting@example.com',
        status: 'pending',
      });
      assert.equal(await canUserLogin(server.url, 'waiting@example.com'), false);
      const response = await request(server.url, 'POST', `/users/${account.id}/activate`, { token });
      assert.equal(response.status, 200);
      assert.equal(response.body.status, 'active');
      assert.ok(await canUserLogin(server.url, 'waiting@example.com'));
    });
  });
}
