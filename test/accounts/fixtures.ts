/** Shared steps of the account suites. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Account, AccountStore, AdminRole } from '../../src/accounts/model.ts';
import { ADMIN_CLIENT, FRONTEND_CLIENT, passwordGrant, request } from '../support/http.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

export const PASSWORD = 'correct horse battery';

/** Stores an account directly (hashing with the app's hasher), bypassing the HTTP routes. */
export async function storeAccount(
  store: AccountStore,
  hash: (password: string) => Promise<string>,
  fields: { identity: string; status?: Account['status']; roles?: AdminRole[]; password?: string },
): Promise<Account> {
  const now = new Date();
  const account: Account = {
    id: randomUUID(),
    identity: fields.identity,
    passwordHash: await hash(fields.password ?? PASSWORD),
    firstName: null,
    lastName: null,
    status: fields.status ?? 'active',
    roles: fields.roles ?? [],
    sessionKey: '',
    hasAvatar: false,
    createdAt: now,
    updatedAt: now,
  };
  await store.create(account);
  return account;
}

export async function userLogin(url: string, username: string, password = PASSWORD) {
  return passwordGrant(url, FRONTEND_CLIENT, { username, password });
}

export async function adminLogin(url: string, username: string, password = PASSWORD) {
  return passwordGrant(url, ADMIN_CLIENT, { username, password });
}

/** Whether the password grant accepts these user credentials. */
export async function canUserLogin(url: string, username: string, password = PASSWORD): Promise<boolean> {
  const response = await request(url, 'POST', '/security/generate-token', {
    json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, username, password },
  });
  return response.status === 200;
}

/** Registers through the API and follows the activation link of the `.eml` file written for it. */
export async function registerAndActivate(
  server: { url: string; logDir: string },
  identity: string,
  password = PASSWORD,
): Promise<string> {
  const registered = await request(server.url, 'POST', '/account/register', {
    json: { identity, password, passwordConfirm: password },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const { path } = linkIn(
    lastMailTo(await readMailDir(server.logDir), identity).parsed,
    '/account/activate/',
  );
  const activated = await request(server.url, 'PATCH', path, { json: { password } });
  assert.equal(activated.status, 200, JSON.stringify(activated.body));
  return String(registered.body.id);
}
