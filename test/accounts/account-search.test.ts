/**
 * Searching, filtering and sorting the account collections through the real server, on memory
 * and (when their URLs are set) on the real backends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Account } from '../../src/accounts/model.ts';
import { accountRecord } from '../support/accounts.ts';
import { request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin } from './fixtures.ts';

interface Listed {
  identity: string;
  firstName: string | null;
  lastName: string | null;
  status: string;
  roles: string[];
}

type Page = {
  _embedded: Record<string, Listed[]>;
  total: number;
  _links: Record<string, { href: string } | undefined>;
};

for (const backend of backends()) {
  describe(`account collections: search, filters and sorts (${backend})`, () => {
    let server: TestServer;
    let token: string;
    let second = 0;
    /** Stores an account directly, each a second newer than the one before. */
    const store = (kind: 'users' | 'admins', fields: Partial<Account>) => {
      const at = new Date(Date.UTC(2025, 0, 1) + ++second * 1000);
      return server.app.stores[kind].create(accountRecord(fields, at));
    };

    before(async () => {
      server = await startTestServer({ backend });
      token = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
      await store('users', { identity: 'ÄLIce@example.com', firstName: null, lastName: 'Zimmer' });
      await store('users', { identity: 'al@example.com', firstName: 'älice', lastName: 'Berg' });
      await store('users', { identity: 'alice@example.com', firstName: 'Alice', status: 'pending' });
      await store('users', { identity: 'bob@example.com', firstName: 'Bob', lastName: 'berg' });
      await store('users', { identity: 'a.c@example.com', lastName: '(a+)+$' });
      await store('admins', { identity: 'ops-lead', roles: ['admin', 'superuser'], lastName: 'Lead' });
      await store('admins', { identity: 'ops-night', roles: ['admin'] });
      await store('admins', { identity: 'ops-gone', roles: ['superuser'], status: 'inactive' });
    });
    after(() => server.close());

    const list = async (path: string) => {
      const response = await request(server.url, 'GET', path, { token });
      assert.equal(response.status, 200, `${path}: ${JSON.stringify(response.body)}`);
      const page = response.body as unknown as Page;
      const rel = path.startsWith('/admins') ? 'admins' : 'users';
      return { page, identities: (page._embedded[rel] ?? []).map((account) => account.identity) };
    };

    test('search is a case-insensitive substring of identity, first or last name', async () => {
      assert.deepEqual((await list('/users?search=%C3%A4LICE')).identities, [
        'ÄLIce@example.com',
        'al@example.com',
      ]);
      assert.deepEqual((await list('/users?search=zimm')).identities, ['ÄLIce@example.com']);
      assert.deepEqual((await list('/users?search=BERG&sort=identity')).identities, [
        'al@example.com',
        'bob@example.com',
      ]);
      assert.deepEqual((await list('/users?search=alice&status=pending')).identities, ['alice@example.com']);
      const { page, identities } = await list('/users?search=example.com&limit=2&sort=-identity');
      assert.equal(page.total, 6, 'the seeded user too');
      // Folded ä (U+00E4) sorts after every ASCII letter.
      assert.deepEqual(identities, ['ÄLIce@example.com', 'user@example.com']);
      assert.equal(page._links.next?.href, '/users?search=example.com&limit=2&sort=-identity&page=2');
    });

    test('search text is literal: patterns and operators match only themselves', async () => {
      assert.deepEqual((await list('/users?search=a.c')).identities, ['a.c@example.com']);
      assert.deepEqual((await list(`/users?search=${encodeURIComponent('(A+)+$')}`)).identities, [
        'a.c@example.com',
      ]);
      for (const search of ['.*', '^al', 'a|b', '[a-z]', '{"$ne":null}', '$where']) {
        const { page } = await list(`/users?search=${encodeURIComponent(search)}`);
        assert.equal(page.total, 0, search);
      }
      // A bracketed name is a parameter of its own, unknown, never an operator on `search`.
      const operator = await request(server.url, 'GET', '/users?search[$ne]=x', { token });
      assert.equal(operator.status, 400);
      assert.ok((operator.body.errors as Record<string, unknown>)['search[$ne]']);
    });

    test('sort on every listed field but roles, "-" descending, text without regard to case', async () => {
      const byLastName = (await list('/users?sort=lastName&limit=100')).identities;
      // Unset names first, then folded: (a+)+$, berg and Berg (ties by id), zimmer.
      assert.deepEqual(byLastName.slice(0, 2).sort(), ['alice@example.com', 'user@example.com']);
      assert.equal(byLastName[2], 'a.c@example.com');
      assert.deepEqual(byLastName.slice(3, 5).sort(), ['al@example.com', 'bob@example.com']);
      assert.equal(byLastName[5], 'ÄLIce@example.com');
      assert.deepEqual((await list('/users?sort=-lastName&limit=100')).identities, [...byLastName].reverse());
      assert.deepEqual((await list('/users?search=LIC&sort=-firstName')).identities, [
        'al@example.com',
        'alice@example.com',
        'ÄLIce@example.com',
      ]);
      for (const field of ['identity', 'firstName', 'lastName', 'status', 'createdAt', 'updatedAt', 'id']) {
        for (const sort of [field, `-${field}`]) await list(`/users?sort=${sort}`);
      }
    });

    test('administrators filter by role and status too', async () => {
      assert.deepEqual((await list('/admins?search=ops&role=superuser&sort=identity')).identities, [
        'ops-gone',
        'ops-lead',
      ]);
      assert.deepEqual(
        (await list('/admins?search=OPS&role=admin&status=active&sort=-identity')).identities,
        ['ops-night', 'ops-lead'],
      );
      assert.deepEqual((await list('/admins?search=lead')).identities, ['ops-lead']);
    });

    test('invalid values are 400 problems naming the parameter', async () => {
      for (const [path, parameter] of [
        ['/users?sort=roles', 'sort'],
        ['/users?sort=-', 'sort'],
        ['/users?sort=lastname', 'sort'],
        ['/users?status=Active', 'status'],
        ['/users?role=admin', 'role'],
        ['/admins?role=root', 'role'],
        ['/admins?status=gone', 'status'],
        ['/users?search=a%00b', 'search'],
        ['/users?search=tab%09', 'search'],
        [`/users?search=${'x'.repeat(321)}`, 'search'],
        ['/users?search=a&search=b', 'search'],
        ['/users?order=desc', 'order'],
      ] as const) {
        const response = await request(server.url, 'GET', path, { token });
        assert.equal(response.status, 400, path);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        assert.deepEqual(Object.keys(response.body.errors as object), [parameter], path);
      }
      assert.equal((await list(`/users?search=${'x'.repeat(320)}`)).page.total, 0);
    });
  });
}
