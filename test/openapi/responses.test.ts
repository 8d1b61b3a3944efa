/**
 * The OpenAPI document against the server it describes. Every documented (route, status)
 * pair is produced by a real request to the running application, and the answer is checked
 * against the document: status, Content-Type, body (Ajv, JSON Schema 2020-12, strict mode)
 * and every documented header. A documented pair that no request here produces fails the
 * suite, unless it is in NOT_PRODUCED with its reason: the document and the server cannot
 * drift apart unnoticed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { loadConfig } from '../../src/config/load.ts';
import { ERROR_REPORT_LOG_FILE } from '../../src/error-report/error-report.ts';
import { BackendUnavailable } from '../../src/errors.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import {
  buildOpenApiDocument,
  documentedRoutes,
  type OpenApiDocument,
  openApiPath,
} from '../../src/openapi/document.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import type { Stores } from '../../src/stores/stores.ts';
import { adminLogin, PASSWORD, storeAccount, userLogin } from '../accounts/fixtures.ts';
import {
  authorizationQuery,
  csrfTokenOf,
  pkce,
  registerClient,
  SPA_REDIRECT,
} from '../support/authorization.ts';
import { FRONTEND_CLIENT, SEEDED_ADMIN, SEEDED_USER } from '../support/http.ts';
import { JPEG, png, WEBP_LOSSY } from '../support/images.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

const REPORT_TOKEN = 'a-reporting-token-of-the-test';
const ENV = {
  APP_URL: 'https://api.example.test',
  // Small, so a too large body is cheap to send.
  BODY_LIMIT: '4kb',
  AVATAR_SIZE_LIMIT: '8kb',
  ERROR_REPORT_TOKENS: `test:${REPORT_TOKEN}`,
  ERROR_REPORT_IP_WHITELIST: '127.0.0.1',
};

/** Documented pairs no request can produce, and why. Printed with every run. */
const NOT_PRODUCED: Readonly<Record<string, string>> = {
  'home 500':
    'GET / reads nothing that can fail (no store, no file): only a bug could answer 500 there; ' +
    'the same generic 500 is produced on every other route',
  'security::stylesheet 500': 'The stylesheet is a constant: only a bug could answer 500 there, as on GET /',
};

const UNKNOWN_HASH = 'A'.repeat(43);
/** A raw image body. */
const image = (bytes: Buffer) => ({ raw: new Uint8Array(bytes), headers: { 'Content-Type': 'image/png' } });
/** One byte over ENV's AVATAR_SIZE_LIMIT. */
const tooLargeImage = png(2, 2, undefined, 8 * 1024 + 1);
const formWithoutFile = {
  raw: '--b\r\nContent-Disposition: form-data; name="note"\r\n\r\nno file\r\n--b--\r\n',
  headers: { 'Content-Type': 'multipart/form-data; boundary=b' },
};
const NEW_PASSWORD = { password: 'a brand new password', passwordConfirm: 'a brand new password' };
const WRONG_BASIC = `Basic ${Buffer.from('frontend:wrong-secret').toString('base64')}`;
const passwordGrant = { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER };
const refreshGrant = (token: string) => ({
  grant_type: 'refresh_token',
  refresh_token: token,
  ...FRONTEND_CLIENT,
});
const publicClient = {
  type: 'public' as const,
  redirectUris: [SPA_REDIRECT],
  grants: ['authorization_code', 'refresh_token'],
  accounts: 'user',
};
const registration = (identity: string) => ({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
const reportToken = { 'Error-Reporting-Token': REPORT_TOKEN };

/** What a case sends. `token` becomes a Bearer header; `json` a JSON body. */
interface Call {
  method: string;
  path: string;
  token?: string;
  json?: unknown;
  /** A body sent as is, with its own Content-Type in `headers`. */
  raw?: string | Uint8Array<ArrayBuffer>;
  /** A form body, as a browser posts it. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** `call('PATCH /users/x', { token, json })`. */
function call(line: string, options: Omit<Call, 'method' | 'path'> = {}): Call {
  const [method = '', path = ''] = line.split(' ');
  return { method, path, ...options };
}

/** The JSON the tests walk through; a type per member would only restate the document. */
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, navigated as the document says
type Json = any;

describeBackendSkip();

for (const backend of backends())
  describe(`every documented response, as the server sends it (${backend})`, () => {
    let server: TestServer;
    let document: OpenApiDocument;
    let ajv: Ajv2020;
    const produced = new Set<string>();

    /** Accounts and tokens the cases use; filled in before the cases run. */
    const given = {
      spa: '',
      machine: '',
      signInForm: '',
      superuser: '',
      superuserId: '',
      admin: '',
      user: '',
      userId: '',
      adminId: '',
      /** A user with an avatar. */
      pictured: '',
      picturedId: '',
    };
    let counter = 0;
    const unique = (prefix: string) => `${prefix}-${Date.now()}-${++counter}`;

    async function newUser(status: 'active' | 'inactive' | 'pending' = 'active') {
      const identity = `${unique('user')}@example.com`;
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
        status,
      });
      return { id: account.id, identity };
    }

    async function newAdmin() {
      const identity = unique('admin');
      const account = await storeAccount(server.app.stores.admins, (p) => server.app.passwords.hash(p), {
        identity,
        roles: ['admin'],
      });
      return { id: account.id, identity };
    }

    /** The hash of the last link of `kind` mailed to `identity`. */
    async function mailedHash(
      identity: string,
      kind: '/account/activate/' | '/account/reset-password/' | '/account/change-identity/',
    ) {
      return linkIn(lastMailTo(await readMailDir(server.logDir), identity).parsed, kind).hash;
    }

    async function resetHash(): Promise<string> {
      const { identity } = await newUser();
      await expectStatus(call('POST /account/reset-password', { json: { email: identity } }), 200);
      return mailedHash(identity, '/account/reset-password/');
    }

    /** A fresh user's change of address link to `identity`. */
    async function changeIdentityHash(identity: string): Promise<string> {
      const { access_token } = await userLogin(server.url, (await newUser()).identity);
      await expectStatus(
        call('POST /users/my-account/identity', {
          token: access_token,
          json: { identity, currentPassword: PASSWORD },
        }),
        202,
      );
      return mailedHash(identity, '/account/change-identity/');
    }

    async function expectStatus(step: Call, status: number): Promise<void> {
      const response = await send(server.url, step);
      assert.equal(response.status, status, `${step.method} ${step.path}: ${response.text}`);
    }

    /**
     * Per route: `reach`, a request that passes every check of the pipeline (credentials, role,
     * body) and reaches the handler, which the generic cases vary; and the statuses that need
     * a request of their own. Whichever of success and 404 has none is what `reach` gets.
     */
    const CASES: Record<string, { reach: () => Call } & Record<number, () => Call | Promise<Call>>> = {
      home: { reach: () => call('GET /') },
      'security::generate-token': {
        reach: () => call('POST /security/generate-token', { json: passwordGrant }),
        400: () => call('POST /security/generate-token', { json: { scope: 'api' } }),
        401: () =>
          call('POST /security/generate-token', {
            headers: { Authorization: WRONG_BASIC },
            json: { grant_type: 'password', scope: 'api', ...SEEDED_USER },
          }),
      },
      'security::refresh-token': {
        reach: () => call('POST /security/refresh-token', { json: refreshGrant('x'.repeat(40)) }),
        200: async () => {
          const { refresh_token } = await userLogin(server.url, SEEDED_USER.username, SEEDED_USER.password);
          return call('POST /security/refresh-token', { json: refreshGrant(refresh_token) });
        },
        400: () =>
          call('POST /security/refresh-token', { json: { grant_type: 'refresh_token', ...FRONTEND_CLIENT } }),
        401: () =>
          call('POST /security/refresh-token', {
            headers: { Authorization: WRONG_BASIC },
            json: { grant_type: 'refresh_token', refresh_token: 'x'.repeat(40) },
          }),
      },
      'security::authorize': {
        reach: () => call(`GET /security/authorize?${authorizationQuery(given.spa, pkce().challenge)}`),
        303: () =>
          call(
            `GET /security/authorize?${authorizationQuery(given.spa, pkce().challenge, { response_type: 'token' })}`,
          ),
        400: () =>
          call(
            `GET /security/authorize?${authorizationQuery(given.spa, pkce().challenge, { client_id: 'nobody' })}`,
          ),
      },
      'security::sign-in': {
        // A form of the sign-in page, never posted while the stores work: each post uses it up.
        reach: () =>
          call('POST /security/authorize', { form: { csrf_token: given.signInForm, ...SEEDED_USER } }),
        303: async () => {
          const page = await send(server.url, {
            method: 'GET',
            path: `/security/authorize?${authorizationQuery(given.spa, pkce().challenge)}`,
          });
          return call('POST /security/authorize', {
            form: { csrf_token: csrfTokenOf(page.text), ...SEEDED_USER },
          });
        },
        400: () => call('POST /security/authorize', { form: { csrf_token: UNKNOWN_HASH, ...SEEDED_USER } }),
        403: () =>
          call('POST /security/authorize', {
            form: { csrf_token: given.signInForm, ...SEEDED_USER },
            headers: { 'Sec-Fetch-Site': 'cross-site' },
          }),
      },
      'security::stylesheet': { reach: () => call('GET /security/sign-in.css') },
      'oauth-client::list': { reach: () => call('GET /oauth-clients', { token: given.superuser }) },
      'oauth-client::create': {
        reach: () =>
          call('POST /oauth-clients', {
            token: given.superuser,
            json: { ...publicClient, name: unique('client') },
          }),
        400: () => call('POST /oauth-clients', { token: given.superuser, json: { name: 'no type' } }),
        409: () =>
          call('POST /oauth-clients', {
            token: given.superuser,
            json: { ...publicClient, name: 'frontend' },
          }),
      },
      'oauth-client::view': {
        reach: () => call('GET /oauth-clients/frontend', { token: given.superuser }),
        404: () => call('GET /oauth-clients/nobody', { token: given.superuser }),
      },
      'oauth-client::update': {
        // A rotation with an overlap: the answer has the new secret and until when the old one works.
        reach: () =>
          call(`PATCH /oauth-clients/${given.machine}`, {
            token: given.superuser,
            json: { rotateSecret: true, previousSecretOverlapSeconds: 600 },
          }),
        400: () =>
          call(`PATCH /oauth-clients/${given.spa}`, { token: given.superuser, json: { rotateSecret: true } }),
        404: () => call('PATCH /oauth-clients/nobody', { token: given.superuser, json: {} }),
        // The seeded `admin` client is the only one that signs administrators in.
        409: () =>
          call('PATCH /oauth-clients/admin', {
            token: given.superuser,
            json: { grants: ['client_credentials'] },
          }),
      },
      'oauth-client::delete': {
        reach: () => call('DELETE /oauth-clients/nobody', { token: given.superuser }),
        204: async () => {
          const name = unique('doomed');
          await expectStatus(
            call('POST /oauth-clients', { token: given.superuser, json: { ...publicClient, name } }),
            201,
          );
          return call(`DELETE /oauth-clients/${name}`, { token: given.superuser });
        },
        409: () => call('DELETE /oauth-clients/admin', { token: given.superuser }),
      },
      'error-report': {
        reach: () =>
          call('POST /error-report', {
            headers: reportToken,
            json: { message: 'TypeError: x is undefined' },
          }),
        400: () => call('POST /error-report', { headers: reportToken, json: { context: {} } }),
        401: () => call('POST /error-report', { json: { message: 'no token' } }),
        403: () =>
          call('POST /error-report', {
            headers: { 'Error-Reporting-Token': 'not-the-configured-token' },
            json: { message: 'wrong token' },
          }),
      },
      'account::register': {
        reach: () =>
          call('POST /account/register', { json: registration(`${unique('register')}@example.com`) }),
        400: () => call('POST /account/register', { json: { identity: 'not an address' } }),
        409: () => call('POST /account/register', { json: registration(SEEDED_USER.username) }),
      },
      'account::resend-activation': {
        reach: () => call('POST /account/activate', { json: { email: 'nobody@example.com' } }),
        400: () => call('POST /account/activate', { json: { email: 'nobody' } }),
      },
      'account::activate': {
        reach: () => call(`PATCH /account/activate/${UNKNOWN_HASH}`, { json: { password: PASSWORD } }),
        200: async () => {
          const identity = `${unique('activate')}@example.com`;
          await expectStatus(call('POST /account/register', { json: registration(identity) }), 201);
          const hash = await mailedHash(identity, '/account/activate/');
          return call(`PATCH /account/activate/${hash}`, { json: { password: PASSWORD } });
        },
        400: () => call(`PATCH /account/activate/${UNKNOWN_HASH}`, { json: {} }),
      },
      'account::recover-identity': {
        reach: () => call('POST /account/recover-identity', { json: { email: SEEDED_USER.username } }),
        400: () => call('POST /account/recover-identity', { json: {} }),
      },
      'account::request-password-reset': {
        reach: () => call('POST /account/reset-password', { json: { email: SEEDED_USER.username } }),
        400: () => call('POST /account/reset-password', { json: { email: ['a@example.com'] } }),
      },
      'account::check-password-reset': {
        reach: () => call(`GET /account/reset-password/${UNKNOWN_HASH}`),
        200: async () => call(`GET /account/reset-password/${await resetHash()}`),
      },
      'account::reset-password': {
        reach: () => call(`PATCH /account/reset-password/${UNKNOWN_HASH}`, { json: NEW_PASSWORD }),
        200: async () => call(`PATCH /account/reset-password/${await resetHash()}`, { json: NEW_PASSWORD }),
        400: () => call(`PATCH /account/reset-password/${UNKNOWN_HASH}`, { json: { password: 'short' } }),
      },
      'user::view-own': { reach: () => call('GET /users/my-account', { token: given.user }) },
      'user::update-own': {
        reach: () => call('PATCH /users/my-account', { token: given.user, json: { firstName: 'Ada' } }),
        400: () => call('PATCH /users/my-account', { token: given.user, json: { status: 'active' } }),
      },
      'user::delete-own': {
        // A wrong password: were it ever to reach the service, it would delete nothing.
        reach: () =>
          call('DELETE /users/my-account', { token: given.user, json: { currentPassword: 'not it' } }),
        204: async () => {
          const { access_token } = await userLogin(server.url, (await newUser()).identity);
          return call('DELETE /users/my-account', {
            token: access_token,
            json: { currentPassword: PASSWORD },
          });
        },
        400: () => call('DELETE /users/my-account', { token: given.user, json: {} }),
      },
      'user::change-identity-own': {
        reach: () =>
          call('POST /users/my-account/identity', {
            token: given.user,
            json: { identity: `${unique('moved')}@example.com`, currentPassword: PASSWORD },
          }),
        400: () => call('POST /users/my-account/identity', { token: given.user, json: {} }),
      },
      'account::change-identity': {
        reach: () =>
          call(`PATCH /account/change-identity/${UNKNOWN_HASH}`, { json: { currentPassword: PASSWORD } }),
        200: async () => {
          const hash = await changeIdentityHash(`${unique('moved')}@example.com`);
          return call(`PATCH /account/change-identity/${hash}`, { json: { currentPassword: PASSWORD } });
        },
        400: () => call(`PATCH /account/change-identity/${UNKNOWN_HASH}`, { json: {} }),
        // The address was given to another account after the link was mailed.
        409: async () => {
          const identity = `${unique('taken')}@example.com`;
          const hash = await changeIdentityHash(identity);
          await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), { identity });
          return call(`PATCH /account/change-identity/${hash}`, { json: { currentPassword: PASSWORD } });
        },
      },
      'user::list': {
        // A search the seeded user matches: a page with accounts in it.
        reach: () =>
          call('GET /users?page=1&limit=5&sort=-lastName&search=EXAMPLE.com', { token: given.admin }),
        400: () => call('GET /users?page=0', { token: given.admin }),
      },
      'user::create': {
        reach: () =>
          call('POST /users', {
            token: given.admin,
            json: { identity: `${unique('create')}@example.com`, password: PASSWORD },
          }),
        400: () => call('POST /users', { token: given.admin, json: { password: PASSWORD } }),
        409: () =>
          call('POST /users', {
            token: given.admin,
            json: { identity: SEEDED_USER.username, password: PASSWORD },
          }),
      },
      'user::view': {
        reach: () => call(`GET /users/${given.userId}`, { token: given.admin }),
        // A user may read only their own account.
        403: async () => call(`GET /users/${(await newUser()).id}`, { token: given.user }),
        404: () => call(`GET /users/${randomUUID()}`, { token: given.admin }),
      },
      'user::update': {
        reach: () => call(`PATCH /users/${given.userId}`, { token: given.admin, json: { lastName: 'L' } }),
        400: () => call(`PATCH /users/${given.userId}`, { token: given.admin, json: { roles: [] } }),
        404: () => call(`PATCH /users/${randomUUID()}`, { token: given.admin, json: { lastName: 'L' } }),
        409: async () =>
          call(`PATCH /users/${(await newUser()).id}`, {
            token: given.admin,
            json: { identity: SEEDED_USER.username },
          }),
      },
      'user::delete': {
        reach: () => call(`DELETE /users/${randomUUID()}`, { token: given.admin }),
        204: async () => call(`DELETE /users/${(await newUser()).id}`, { token: given.admin }),
      },
      'user::activate': {
        reach: () => call(`POST /users/${randomUUID()}/activate`, { token: given.admin }),
        200: async () =>
          call(`POST /users/${(await newUser('inactive')).id}/activate`, { token: given.admin }),
      },
      'user::view-own-avatar': {
        reach: () => call('GET /users/my-account/avatar', { token: given.pictured }),
        404: () => call('GET /users/my-account/avatar', { token: given.user }),
      },
      'user::replace-own-avatar': {
        reach: () => call('PUT /users/my-account/avatar', { token: given.pictured, ...image(png(2, 2)) }),
        400: () => call('PUT /users/my-account/avatar', { token: given.pictured, ...formWithoutFile }),
        413: () => call('PUT /users/my-account/avatar', { token: given.pictured, ...image(tooLargeImage) }),
      },
      'user::delete-own-avatar': {
        // Having none is no error: removing it again is what a retry does.
        reach: () => call('DELETE /users/my-account/avatar', { token: given.user }),
      },
      'user::view-avatar': {
        reach: () => call(`GET /users/${given.picturedId}/avatar`, { token: given.admin }),
        403: () => call(`GET /users/${given.picturedId}/avatar`, { token: given.user }),
        404: () => call(`GET /users/${randomUUID()}/avatar`, { token: given.admin }),
      },
      'user::replace-avatar': {
        reach: () => call(`PUT /users/${given.picturedId}/avatar`, { token: given.admin, ...image(JPEG) }),
        400: () => call(`PUT /users/${given.picturedId}/avatar`, { token: given.admin, ...formWithoutFile }),
        403: () => call(`PUT /users/${given.picturedId}/avatar`, { token: given.user, ...image(JPEG) }),
        404: () => call(`PUT /users/${randomUUID()}/avatar`, { token: given.admin, ...image(JPEG) }),
        413: () =>
          call(`PUT /users/${given.picturedId}/avatar`, { token: given.admin, ...image(tooLargeImage) }),
      },
      'user::delete-avatar': {
        reach: () => call(`DELETE /users/${randomUUID()}/avatar`, { token: given.admin }),
        204: () => call(`DELETE /users/${given.userId}/avatar`, { token: given.admin }),
        403: () => call(`DELETE /users/${given.picturedId}/avatar`, { token: given.user }),
      },
      'admin::view-own': { reach: () => call('GET /admins/my-account', { token: given.admin }) },
      'admin::update-own': {
        reach: () => call('PATCH /admins/my-account', { token: given.admin, json: { lastName: 'Ops' } }),
        // A new password needs the current one.
        400: () =>
          call('PATCH /admins/my-account', { token: given.admin, json: { password: 'a new password' } }),
      },
      'admin::list': {
        reach: () =>
          call('GET /admins?status=active&role=superuser&search=ADM&sort=identity', { token: given.admin }),
        400: () => call('GET /admins?limit=1000', { token: given.admin }),
      },
      'admin::create': {
        reach: () =>
          call('POST /admins', {
            token: given.superuser,
            json: { identity: unique('created'), password: PASSWORD },
          }),
        400: () => call('POST /admins', { token: given.superuser, json: { identity: 'x y' } }),
        // Identities are unique without regard to case.
        409: () =>
          call('POST /admins', {
            token: given.superuser,
            json: { identity: SEEDED_ADMIN.username.toUpperCase(), password: PASSWORD },
          }),
      },
      'admin::view': {
        reach: () => call(`GET /admins/${given.adminId}`, { token: given.admin }),
        404: () => call(`GET /admins/${randomUUID()}`, { token: given.admin }),
      },
      'admin::update': {
        reach: () =>
          call(`PATCH /admins/${given.adminId}`, { token: given.superuser, json: { firstName: 'Grace' } }),
        400: () => call(`PATCH /admins/${given.adminId}`, { token: given.superuser, json: { roles: [] } }),
        404: () =>
          call(`PATCH /admins/${randomUUID()}`, { token: given.superuser, json: { firstName: 'Grace' } }),
        409: async () =>
          call(`PATCH /admins/${(await newAdmin()).id}`, {
            token: given.superuser,
            json: { identity: SEEDED_ADMIN.username },
          }),
      },
      'admin::delete': {
        reach: () => call(`DELETE /admins/${randomUUID()}`, { token: given.superuser }),
        204: async () => call(`DELETE /admins/${(await newAdmin()).id}`, { token: given.superuser }),
        // The seeded superuser is the only active one: it cannot go.
        409: () => call(`DELETE /admins/${given.superuserId}`, { token: given.superuser }),
      },
    };

    /** A token of a role the route does not admit: a plain admin's if it can be, else a user's. */
    function wrongRoleToken(route: AnyRoute): string {
      const permission = route.permission === 'public' ? [] : route.permission;
      const token = !permission.includes('admin')
        ? given.admin
        : !permission.includes('user')
          ? given.user
          : '';
      if (!token)
        throw new Error(`${route.name} admits both admins and users: give it a 403 case of its own`);
      return token;
    }

    /** The statuses every route answers the same way, built from its `reach` request. */
    function genericCase(route: AnyRoute, status: number): (() => Call) | undefined {
      const reach = CASES[route.name]?.reach;
      if (!reach) return undefined;
      const bearer = route.permission !== 'public';
      switch (status) {
        case 200:
        case 201:
        case 202:
        case 204:
        case 404:
          return reach;
        case 401:
          return bearer ? () => ({ ...reach(), token: undefined }) : undefined;
        case 403:
          return bearer ? () => ({ ...reach(), token: wrongRoleToken(route) }) : undefined;
        case 413:
          return () => ({
            ...reach(),
            json: undefined,
            form: undefined,
            raw: JSON.stringify({ padding: 'x'.repeat(8 * 1024) }),
            headers: { 'Content-Type': 'application/json' },
          });
        case 415:
          return () => ({
            ...reach(),
            json: undefined,
            form: undefined,
            raw: 'plain text',
            headers: { 'Content-Type': 'text/plain' },
          });
        default:
          return undefined;
      }
    }

    before(async () => {
      server = await startTestServer({ backend, env: ENV });
      document = buildOpenApiDocument(server.app.routes, loadConfig(ENV, readPackageInfo()));
      ajv = new Ajv2020({ strict: true, allErrors: true });
      // ajv-formats is CommonJS: its plugin is also the `default` of what ESM imports.
      addFormats.default(ajv);
      ajv.addSchema({ $id: COMPONENTS, $defs: absoluteReferences((document.components as Json).schemas) });

      given.superuser = (
        await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)
      ).access_token;
      given.spa = (await registerClient(server.url, given.superuser, { ...publicClient, name: 'spa' })).name;
      given.machine = 'machine';
      await expectStatus(
        call('POST /oauth-clients', {
          token: given.superuser,
          json: {
            name: given.machine,
            type: 'confidential',
            grants: ['client_credentials'],
            accounts: 'user',
          },
        }),
        201,
      );
      const page = await send(server.url, {
        method: 'GET',
        path: `/security/authorize?${authorizationQuery(given.spa, pkce().challenge)}`,
      });
      given.signInForm = csrfTokenOf(page.text);
      given.superuserId = String((await server.app.stores.admins.findByIdentity(SEEDED_ADMIN.username))?.id);
      const admin = await newAdmin();
      given.adminId = admin.id;
      given.admin = (await adminLogin(server.url, admin.identity)).access_token;
      const user = await newUser();
      given.userId = user.id;
      given.user = (await userLogin(server.url, user.identity)).access_token;
      const pictured = await newUser();
      given.picturedId = pictured.id;
      given.pictured = (await userLogin(server.url, pictured.identity)).access_token;
      await expectStatus(
        call('PUT /users/my-account/avatar', { token: given.pictured, ...image(WEBP_LOSSY) }),
        204,
      );
    });
    after(() => server.close());

    /** The documented responses of a route, by status. */
    function responsesOf(route: AnyRoute): Record<string, Json> {
      const operation = document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()] as Json;
      assert.ok(operation, `${route.name} is documented`);
      return operation.responses;
    }

    /** Sends `call` and checks the answer against what the document says of (route, status). */
    async function check(route: AnyRoute, status: string, call: Call, documented: Json): Promise<void> {
      const response = await send(server.url, call);
      const where = `${route.name} ${status}: ${call.method} ${call.path} answered ${response.status} ${response.text}`;
      assert.equal(response.status, Number(status), where);
      checkResponse(ajv, document, documented, response, where);
      produced.add(`${route.name} ${status}`);
    }

    test('every documented success and error, produced through HTTP', async (t) => {
      for (const route of documentedRoutes(server.app.routes)) {
        for (const [status, documented] of Object.entries(responsesOf(route))) {
          const produce = CASES[route.name]?.[Number(status)] ?? genericCase(route, Number(status));
          if (!produce) continue;
          await t.test(`${route.name} ${status}`, async () =>
            check(route, status, await produce(), documented),
          );
        }
      }
    });

    /** Failures a broken store does not cause; each returns what repairs it. */
    const FAULTS: Record<string, () => Promise<() => void>> = {
      // The report log cannot be appended to: a directory stands where the file goes.
      'error-report 500': async () => {
        const file = join(server.logDir, ERROR_REPORT_LOG_FILE);
        await rm(file, { force: true });
        await mkdir(file, { recursive: true });
        return () => rmSync(file, { recursive: true, force: true });
      },
    };

    test('every documented 503 and 500, with what the route depends on failing', async (t) => {
      const failures: [string, () => Error][] = [
        ['503', () => new BackendUnavailable('MongoDB')],
        ['500', () => new Error('a bug in a store')],
      ];
      for (const [status, failure] of failures) {
        for (const route of documentedRoutes(server.app.routes)) {
          if (NOT_PRODUCED[`${route.name} ${status}`]) continue;
          const documented = responsesOf(route)[status];
          const reach = CASES[route.name]?.reach;
          if (!documented || !reach) continue;
          // Built while everything works: a case may read or write its fixtures first.
          const call = reach();
          const repair = await (
            FAULTS[`${route.name} ${status}`] ?? (() => breakStores(server.app.stores, failure))
          )();
          try {
            await t.test(`${route.name} ${status}`, () => check(route, status, call, documented));
          } finally {
            repair();
          }
        }
      }
    });

    test('a method a path does not have: 405 with Allow, as components.responses.MethodNotAllowed says', async () => {
      const documented = (document.components as Json).responses.MethodNotAllowed;
      for (const [method, path, allow] of [
        ['PUT', '/users', 'GET, HEAD, POST'],
        ['GET', '/security/generate-token', 'POST'],
        ['POST', `/users/${randomUUID()}`, 'GET, HEAD, PATCH, DELETE'],
      ] as const) {
        const response = await send(server.url, { method, path });
        const where = `${method} ${path}: ${response.status} ${response.text}`;
        assert.equal(response.status, 405, where);
        checkResponse(ajv, document, documented, response, where);
        assert.equal(response.headers.get('allow'), allow, where);
      }
    });

    test('every documented (route, status) was produced, but for the listed exceptions', (t) => {
      const documented = documentedRoutes(server.app.routes).flatMap((route) =>
        Object.keys(responsesOf(route)).map((status) => `${route.name} ${status}`),
      );
      for (const [pair, reason] of Object.entries(NOT_PRODUCED)) {
        t.diagnostic(`not produced: ${pair}: ${reason}`);
        assert.ok(documented.includes(pair), `${pair} is listed as not produced but is not documented`);
        assert.ok(!produced.has(pair), `${pair} is listed as not produced but was`);
      }
      const missing = documented.filter((pair) => !produced.has(pair) && !NOT_PRODUCED[pair]);
      assert.deepEqual(missing, [], 'documented responses no request produced');
    });
  });

const COMPONENTS = 'https://token-service.test/components';

/**
 * A schema of the document with its references made absolute: the components schemas are
 * the `$defs` of one schema resource, COMPONENTS, so `#/components/schemas/X` is
 * `<COMPONENTS>#/$defs/X` from any schema compiled on its own.
 */
function absoluteReferences(schema: unknown): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS}#/$defs/`));
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function send(baseUrl: string, call: Call): Promise<Answer> {
  const headers: Record<string, string> = { Accept: 'application/json', ...call.headers };
  if (call.token) headers.Authorization = `Bearer ${call.token}`;
  let body = call.raw;
  if (call.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(call.json);
  } else if (call.form !== undefined) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(call.form).toString();
  }
  const response = await fetch(`${baseUrl}${call.path}`, {
    method: call.method,
    headers,
    body,
    redirect: 'manual',
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const compiled = new Map<string, ValidateFunction>();

/** Validates `value` against a schema of the document (its references resolve in COMPONENTS). */
function validate(ajv: Ajv2020, schema: unknown, value: unknown, where: string): void {
  const text = JSON.stringify(absoluteReferences(schema));
  let check = compiled.get(text);
  if (!check) {
    check = ajv.compile(JSON.parse(text));
    compiled.set(text, check);
  }
  assert.ok(check(value), `${where}\n${JSON.stringify(check.errors, null, 2)}`);
}

/** Follows a `#/components/...` reference of the document. */
function resolved(document: OpenApiDocument, node: Json): Json {
  if (typeof node?.$ref !== 'string') return node;
  return node.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((at: Json, part: string) => at?.[part], document);
}

/** Content-Type, body and headers of an answer against a documented response. */
function checkResponse(
  ajv: Ajv2020,
  document: OpenApiDocument,
  documented: Json,
  answer: Answer,
  where: string,
) {
  const content = Object.entries((documented.content ?? {}) as Record<string, { schema: unknown }>);
  if (content.length === 0) {
    assert.equal(answer.text, '', `${where}: no body is documented`);
  } else {
    const mediaType = answer.headers.get('content-type')?.split(';')[0]?.trim();
    const [, media] = content.find(([type]) => type === mediaType) ?? [];
    assert.ok(media, `${where}: Content-Type ${mediaType} is not among ${content.map(([type]) => type)}`);
    const body = mediaType?.endsWith('json') ? JSON.parse(answer.text) : answer.text;
    validate(ajv, media.schema, body, where);
  }
  for (const [name, header] of Object.entries((documented.headers ?? {}) as Record<string, Json>)) {
    const value = answer.headers.get(name);
    assert.ok(value !== null, `${where}: documented header ${name} is missing`);
    validate(ajv, resolved(document, header).schema, value, `${where}: header ${name}`);
  }
}

/**
 * Makes every method of every store throw `failure()`, as a backend outage (or a bug) would,
 * and returns what puts them back. The application holds these very objects.
 */
function breakStores(stores: Stores, failure: () => Error): () => void {
  const repairs: (() => void)[] = [];
  for (const store of Object.values(stores)) {
    if (typeof store !== 'object' || store === null) continue;
    for (const method of methodNames(store)) {
      const own = Object.getOwnPropertyDescriptor(store, method);
      Object.defineProperty(store, method, {
        configurable: true,
        writable: true,
        value: async () => {
          throw failure();
        },
      });
      repairs.push(() => {
        if (own) Object.defineProperty(store, method, own);
        else delete (store as Record<string, unknown>)[method];
      });
    }
  }
  return () => {
    for (const repair of repairs) repair();
  };
}

function methodNames(object: object): string[] {
  const names = new Set<string>();
  for (let at: object | null = object; at && at !== Object.prototype; at = Object.getPrototypeOf(at)) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (name !== 'constructor' && typeof (object as Record<string, unknown>)[name] === 'function')
        names.add(name);
    }
  }
  return [...names];
}
