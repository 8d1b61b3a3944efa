import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { nextAvatarGeneration } from '../../src/accounts/avatar-store.ts';
import type { AdminRole } from '../../src/accounts/model.ts';
import { loadConfig } from '../../src/config/load.ts';
import { routeTable } from '../../src/http/routes/index.ts';
import { openApiPath } from '../../src/openapi/document.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import {
  authorizationQuery,
  csrfTokenOf,
  pkce,
  registerClient,
  SPA_REDIRECT,
  superuserToken,
} from '../support/authorization.ts';
import { FRONTEND_CLIENT, passwordRequest, request, SEEDED_USER } from '../support/http.ts';
import { png } from '../support/images.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

type Caller = 'guest' | 'user' | 'admin' | 'superuser';
const CALLERS: readonly Caller[] = ['guest', 'user', 'admin', 'superuser'];

interface Case {
  /** `METHOD /path`, for the test name. */
  route: string;
  /** Builds the path (creating whatever the request acts on) for this caller. */
  path: (ctx: Context) => Promise<string> | string;
  body?: (ctx: Context) => unknown;
  /** A form body instead of JSON. */
  form?: (ctx: Context) => Promise<Record<string, string>>;
  /** A raw body instead, sent with its Content-Type. */
  raw?: () => { body: Uint8Array<ArrayBuffer>; type: string };
  headers?: Record<string, string>;
  /** Expected status per caller. */
  expect: Record<Caller, number>;
}

interface Context {
  baseUrl: string;
  newUser(status?: 'active' | 'pending'): Promise<string>;
  /** A new user with an avatar. */
  newUserWithAvatar(): Promise<string>;
  newAdmin(roles?: AdminRole[]): Promise<string>;
  /** A refresh token of a fresh user's session. */
  refreshToken(): Promise<string>;
  /** A public client allowed the authorization code grant. */
  spa: string;
  /** A fresh client, named. */
  newClient(): Promise<string>;
}

const unique = () => `${randomUUID().slice(0, 8)}@example.com`;
const REPORT_TOKEN = 'a-reporting-token-of-the-matrix';
const HASH = 'A'.repeat(43);
const ALL = (status: number): Record<Caller, number> => ({
  guest: status,
  user: status,
  admin: status,
  superuser: status,
});
const USER_ONLY = (status: number) => ({ guest: 401, user: status, admin: 403, superuser: 403 });
const ADMINS = (status: number) => ({ guest: 401, user: 403, admin: status, superuser: status });
const SUPERUSER_ONLY = (status: number) => ({ guest: 401, user: 403, admin: 403, superuser: status });
const avatarUpload = () => ({ body: new Uint8Array(png(2, 2)), type: 'image/png' });
const newClientBody = () => ({
  name: `client-${randomUUID()}`,
  type: 'public' as const,
  redirectUris: [SPA_REDIRECT],
  grants: ['authorization_code', 'refresh_token'],
  accounts: 'user',
});

/** Every route, and what each kind of caller gets (docs/api.md, "Who may call what"). */
const CASES: Case[] = [
  // Public routes outside the accounts: a caller's access token changes nothing there.
  {
    route: 'GET /',
    path: () => '/',
    expect: ALL(200),
  },
  {
    route: 'POST /security/generate-token',
    path: () => '/security/generate-token',
    body: () => passwordRequest(),
    expect: ALL(200),
  },
  {
    route: 'POST /security/refresh-token',
    path: () => '/security/refresh-token',
    body: async (ctx) => ({
      grant_type: 'refresh_token',
      refresh_token: await ctx.refreshToken(),
      ...FRONTEND_CLIENT,
    }),
    expect: ALL(200),
  },
  // The sign-in page is for anyone with a browser: an access token changes nothing there.
  {
    route: 'GET /security/authorize',
    path: (ctx) => `/security/authorize?${authorizationQuery(ctx.spa, pkce().challenge)}`,
    expect: ALL(200),
  },
  {
    route: 'POST /security/authorize',
    path: () => '/security/authorize',
    form: async (ctx) => {
      const page = await fetch(
        `${ctx.baseUrl}/security/authorize?${authorizationQuery(ctx.spa, pkce().challenge)}`,
      );
      return { csrf_token: csrfTokenOf(await page.text()), ...SEEDED_USER };
    },
    expect: ALL(303),
  },
  {
    route: 'GET /security/sign-in.css',
    path: () => '/security/sign-in.css',
    expect: ALL(200),
  },
  {
    route: 'POST /error-report',
    path: () => '/error-report',
    headers: { 'Error-Reporting-Token': REPORT_TOKEN },
    body: () => ({ message: 'TypeError: x is undefined' }),
    expect: ALL(201),
  },
  {
    route: 'POST /account/register',
    path: () => '/account/register',
    body: () => ({ identity: unique(), password: PASSWORD, passwordConfirm: PASSWORD }),
    expect: ALL(201),
  },
  {
    route: 'POST /account/activate',
    path: () => '/account/activate',
    body: () => ({ email: unique() }),
    expect: ALL(200),
  },
  {
    route: 'PATCH /account/activate/{hash}',
    path: () => `/account/activate/${HASH}`,
    body: () => ({ password: PASSWORD }),
    expect: ALL(404),
  },
  {
    route: 'POST /account/recover-identity',
    path: () => '/account/recover-identity',
    body: () => ({ email: unique() }),
    expect: ALL(200),
  },
  {
    route: 'POST /account/reset-password',
    path: () => '/account/reset-password',
    body: () => ({ email: unique() }),
    expect: ALL(200),
  },
  {
    route: 'GET /account/reset-password/{hash}',
    path: () => `/account/reset-password/${HASH}`,
    expect: ALL(404),
  },
  {
    route: 'PATCH /account/reset-password/{hash}',
    path: () => `/account/reset-password/${HASH}`,
    body: () => ({ password: PASSWORD, passwordConfirm: PASSWORD }),
    expect: ALL(404),
  },
  // The account pages: a browser's GET, and their forms (docs/api.md, "Pages for people").
  {
    route: 'GET /account/register (page)',
    path: () => '/account/register',
    headers: { Accept: 'text/html' },
    expect: ALL(200),
  },
  {
    route: 'GET /account/reset-password (page)',
    path: () => '/account/reset-password',
    headers: { Accept: 'text/html' },
    expect: ALL(200),
  },
  ...(['activate', 'change-identity'] as const).map(
    (page): Case => ({
      route: `GET /account/${page}/{hash} (page)`,
      path: () => `/account/${page}/${HASH}`,
      headers: { Accept: 'text/html' },
      expect: ALL(404),
    }),
  ),
  ...(['activate', 'change-identity', 'reset-password'] as const).map(
    (page): Case => ({
      route: `POST /account/${page}/{hash} (form)`,
      path: () => `/account/${page}/${HASH}`,
      form: async () => ({ csrf_token: 'not one the service sealed' }),
      expect: ALL(400),
    }),
  ),
  {
    route: 'POST /account/register (form)',
    path: () => '/account/register',
    form: async (ctx) => {
      const page = await fetch(`${ctx.baseUrl}/account/register`, { headers: { Accept: 'text/html' } });
      const csrf_token = csrfTokenOf(await page.text());
      return { csrf_token, identity: unique(), password: PASSWORD, passwordConfirm: PASSWORD };
    },
    expect: ALL(200),
  },
  {
    route: 'POST /account/reset-password (form)',
    path: () => '/account/reset-password',
    form: async (ctx) => {
      const page = await fetch(`${ctx.baseUrl}/account/reset-password`, { headers: { Accept: 'text/html' } });
      return { csrf_token: csrfTokenOf(await page.text()), email: unique() };
    },
    expect: ALL(200),
  },
  {
    route: 'GET /users/my-account',
    path: () => '/users/my-account',
    expect: USER_ONLY(200),
  },
  {
    route: 'PATCH /users/my-account',
    path: () => '/users/my-account',
    body: () => ({ firstName: 'New' }),
    expect: USER_ONLY(200),
  },
  {
    route: 'DELETE /users/my-account',
    path: () => '/users/my-account',
    body: () => ({ currentPassword: PASSWORD }),
    expect: USER_ONLY(204),
  },
  {
    route: 'POST /users/my-account/identity',
    path: () => '/users/my-account/identity',
    body: () => ({ identity: unique(), currentPassword: PASSWORD }),
    expect: USER_ONLY(202),
  },
  {
    route: 'PATCH /account/change-identity/{hash}',
    path: () => `/account/change-identity/${HASH}`,
    body: () => ({ currentPassword: PASSWORD }),
    expect: ALL(404),
  },
  {
    route: 'GET /users',
    path: () => '/users',
    expect: ADMINS(200),
  },
  {
    route: 'POST /users',
    path: () => '/users',
    body: () => ({ identity: unique(), password: PASSWORD }),
    expect: ADMINS(201),
  },
  {
    route: 'GET /users/{id}',
    path: async (ctx) => `/users/${await ctx.newUser()}`,
    expect: ADMINS(200),
  },
  {
    route: 'PATCH /users/{id}',
    path: async (ctx) => `/users/${await ctx.newUser()}`,
    body: () => ({ lastName: 'Changed' }),
    expect: ADMINS(200),
  },
  {
    route: 'DELETE /users/{id}',
    path: async (ctx) => `/users/${await ctx.newUser()}`,
    expect: ADMINS(204),
  },
  {
    route: 'POST /users/{id}/activate',
    path: async (ctx) => `/users/${await ctx.newUser('pending')}/activate`,
    expect: ADMINS(200),
  },
  {
    route: 'GET /users/my-account/avatar',
    path: () => '/users/my-account/avatar',
    // A fresh user has none: past the permission check, the answer is that there is no avatar.
    expect: USER_ONLY(404),
  },
  {
    route: 'PUT /users/my-account/avatar',
    path: () => '/users/my-account/avatar',
    raw: avatarUpload,
    expect: USER_ONLY(204),
  },
  {
    route: 'DELETE /users/my-account/avatar',
    path: () => '/users/my-account/avatar',
    expect: USER_ONLY(204),
  },
  // Another user's avatar: a user only their own (see below).
  {
    route: 'GET /users/{id}/avatar',
    path: async (ctx) => `/users/${await ctx.newUserWithAvatar()}/avatar`,
    expect: ADMINS(200),
  },
  {
    route: 'PUT /users/{id}/avatar',
    path: async (ctx) => `/users/${await ctx.newUser()}/avatar`,
    raw: avatarUpload,
    expect: ADMINS(204),
  },
  {
    route: 'DELETE /users/{id}/avatar',
    path: async (ctx) => `/users/${await ctx.newUserWithAvatar()}/avatar`,
    expect: ADMINS(204),
  },
  {
    route: 'GET /admins/my-account',
    path: () => '/admins/my-account',
    expect: ADMINS(200),
  },
  {
    route: 'PATCH /admins/my-account',
    path: () => '/admins/my-account',
    body: () => ({ firstName: 'New' }),
    expect: ADMINS(200),
  },
  {
    route: 'GET /admins',
    path: () => '/admins',
    expect: ADMINS(200),
  },
  {
    route: 'POST /admins',
    path: () => '/admins',
    body: () => ({ identity: `admin-${randomUUID().slice(0, 8)}`, password: PASSWORD }),
    expect: SUPERUSER_ONLY(201),
  },
  {
    route: 'GET /admins/{id}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    expect: ADMINS(200),
  },
  {
    route: 'PATCH /admins/{id}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    body: () => ({ lastName: 'Changed' }),
    expect: ADMINS(200),
  },
  // Another admin's identity, password and status: only a superuser changes them.
  {
    route: 'PATCH /admins/{id} {identity}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    body: () => ({ identity: `renamed-${randomUUID().slice(0, 8)}` }),
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'PATCH /admins/{id} {password}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    body: () => ({ password: 'set by someone else' }),
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'PATCH /admins/{id} {status}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    body: () => ({ status: 'inactive' }),
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'DELETE /admins/{id}',
    path: async (ctx) => `/admins/${await ctx.newAdmin()}`,
    expect: SUPERUSER_ONLY(204),
  },
  // Clients decide who may sign people in: only superusers register, read and change them.
  {
    route: 'GET /oauth-clients',
    path: () => '/oauth-clients',
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'POST /oauth-clients',
    path: () => '/oauth-clients',
    body: newClientBody,
    expect: SUPERUSER_ONLY(201),
  },
  {
    route: 'GET /oauth-clients/{name}',
    path: async (ctx) => `/oauth-clients/${await ctx.newClient()}`,
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'PATCH /oauth-clients/{name}',
    path: async (ctx) => `/oauth-clients/${await ctx.newClient()}`,
    body: () => ({ grants: ['authorization_code'] }),
    expect: SUPERUSER_ONLY(200),
  },
  {
    route: 'DELETE /oauth-clients/{name}',
    path: async (ctx) => `/oauth-clients/${await ctx.newClient()}`,
    expect: SUPERUSER_ONLY(204),
  },
];

test('every route of the route table has a case here', () => {
  const covered = new Set(CASES.map((routeCase) => routeCase.route.split(' ').slice(0, 2).join(' ')));
  const missing = routeTable(loadConfig({}, readPackageInfo()).grants)
    .map((route) => `${route.method} ${openApiPath(route.path)}`)
    .filter((route) => !covered.has(route));
  assert.deepEqual(missing, [], 'routes without a case in the permission matrix');
});

for (const backend of backends()) {
  describe(`who may call which route (${backend})`, () => {
    let server: TestServer;
    let ctx: Context;
    before(async () => {
      server = await startTestServer({
        backend,
        env: { ERROR_REPORT_TOKENS: `matrix:${REPORT_TOKEN}`, ERROR_REPORT_IP_WHITELIST: '127.0.0.1' },
      });
      const hash = (password: string) => server.app.passwords.hash(password);
      const superuser = await superuserToken(server.url);
      const newClient = async () => (await registerClient(server.url, superuser, newClientBody())).name;
      ctx = {
        baseUrl: server.url,
        spa: await newClient(),
        newClient,
        refreshToken: async () => {
          const identity = unique();
          await storeAccount(server.app.stores.users, hash, { identity });
          return (await userLogin(server.url, identity)).refresh_token;
        },
        newUser: async (status = 'active') =>
          (await storeAccount(server.app.stores.users, hash, { identity: unique(), status })).id,
        newUserWithAvatar: async () => {
          const { id } = await storeAccount(server.app.stores.users, hash, { identity: unique() });
          const generation = nextAvatarGeneration(new Date());
          await server.app.stores.avatars.put(id, { mediaType: 'image/png', bytes: png(1, 1) }, generation);
          await server.app.stores.users.writeAvatarFlag(id, generation, { hasAvatar: true });
          return id;
        },
        newAdmin: async (roles = ['admin']) =>
          (await storeAccount(server.app.stores.admins, hash, { identity: `a-${randomUUID()}`, roles })).id,
      };
    });
    after(() => server.close());

    /** A fresh signed-in caller per request, so a deletion never disturbs the next case. */
    async function tokenFor(caller: Caller): Promise<string | undefined> {
      const hash = (password: string) => server.app.passwords.hash(password);
      if (caller === 'guest') return undefined;
      if (caller === 'user') {
        const identity = unique();
        await storeAccount(server.app.stores.users, hash, { identity });
        return (await userLogin(server.url, identity)).access_token;
      }
      const identity = `${caller}-${randomUUID()}`;
      await storeAccount(server.app.stores.admins, hash, { identity, roles: [caller] });
      return (await adminLogin(server.url, identity)).access_token;
    }

    for (const routeCase of CASES) {
      const [method = ''] = routeCase.route.split(' ');
      test(`${routeCase.route}: ${CALLERS.map((c) => `${c} ${routeCase.expect[c]}`).join(', ')}`, async () => {
        for (const caller of CALLERS) {
          const token = await tokenFor(caller);
          const path = await routeCase.path(ctx);
          const raw = routeCase.raw?.();
          const response = await request(server.url, method, path, {
            token,
            json: await routeCase.body?.(ctx),
            form: await routeCase.form?.(ctx),
            raw: raw?.body,
            headers: { ...routeCase.headers, ...(raw ? { 'Content-Type': raw.type } : {}) },
          });
          assert.equal(
            response.status,
            routeCase.expect[caller],
            `${caller} ${method} ${path}: ${JSON.stringify(response.body)}`,
          );
          if (response.status === 401) assert.equal(response.headers.get('www-authenticate'), 'Bearer');
          // A page's refusal is a page; everything else's, problem+json.
          if (response.status >= 400)
            assert.equal(
              response.headers.get('content-type'),
              / \((page|form)\)$/.test(routeCase.route)
                ? 'text/html; charset=utf-8'
                : 'application/problem+json',
            );
        }
      });
    }

    test('a user reads their own account by id, but not another one (403)', async () => {
      const identity = unique();
      const own = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      const token = (await userLogin(server.url, identity)).access_token;
      assert.equal((await request(server.url, 'GET', `/users/${own.id}`, { token })).status, 200);
      const other = await ctx.newUser();
      assert.equal((await request(server.url, 'GET', `/users/${other}`, { token })).status, 403);
    });

    test("a user sets, reads and removes their own avatar by id, and no one else's (403)", async () => {
      const identity = unique();
      const own = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      const token = (await userLogin(server.url, identity)).access_token;
      const upload = { raw: avatarUpload().body, headers: { 'Content-Type': 'image/png' } };
      const path = `/users/${own.id}/avatar`;
      assert.equal((await request(server.url, 'PUT', path, { token, ...upload })).status, 204);
      assert.equal((await request(server.url, 'GET', path, { token })).status, 200);
      assert.equal((await request(server.url, 'DELETE', path, { token })).status, 204);
      const other = `/users/${await ctx.newUserWithAvatar()}/avatar`;
      assert.equal((await request(server.url, 'PUT', other, { token, ...upload })).status, 403);
      for (const method of ['GET', 'DELETE'])
        assert.equal((await request(server.url, method, other, { token })).status, 403, method);
    });
  });
}
