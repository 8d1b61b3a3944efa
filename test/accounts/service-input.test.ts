/**
 * The account services check their own input, whoever calls them: the routes check the same
 * schemas early, and `admin:create` hands over what the domain's check accepted. Through the
 * services the HTTP application and the CLI both act through (the composition root).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkNewAccount } from '../../src/accounts/input.ts';
import { OPERATOR } from '../../src/caller.ts';
import { loadConfig } from '../../src/config/load.ts';
import { BadRequest, ValidationFailed } from '../../src/errors.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { type AccountServices, openAccountServices } from '../../src/services.ts';
import { PASSWORD, storeAccount } from './fixtures.ts';

/** Rejects with a 400 naming exactly these fields. */
async function refused(attempt: () => Promise<unknown>, fields: string[]): Promise<void> {
  await assert.rejects(attempt, (error: unknown) => {
    assert.ok(error instanceof ValidationFailed, String(error));
    assert.deepEqual(Object.keys(error.extensions.errors as object).sort(), [...fields].sort());
    return true;
  });
}

describe('account services validate their own input', () => {
  let services: AccountServices;
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'service-input-'));
    services = await openAccountServices(
      loadConfig({ LOG_DIR: join(root, 'log'), BCRYPT_COST: '4' }, readPackageInfo()),
    );
  });
  after(async () => {
    await services.close();
    await rm(root, { recursive: true, force: true });
  });

  test('management refuses what the routes refuse, and stores nothing', async () => {
    const { accounts, stores } = services;
    const user = await storeAccount(stores.users, (p) => services.passwords.hash(p), {
      identity: 'held@example.com',
    });
    const actor = { role: 'user' as const, account: user };
    await refused(
      () => accounts.user.create(OPERATOR, { identity: 'no-address', password: PASSWORD }),
      ['identity'],
    );
    await refused(
      () => accounts.admin.create(OPERATOR, { identity: 'has space', password: 'short' }),
      ['identity', 'password'],
    );
    await refused(
      () =>
        accounts.user.create(OPERATOR, {
          identity: 'roles@example.com',
          password: PASSWORD,
          roles: ['admin'],
        }),
      ['roles'],
    );
    await refused(
      () => accounts.user.update(OPERATOR, user.id, { firstName: 'x'.repeat(101) }),
      ['firstName'],
    );
    await refused(() => accounts.user.updateOwn(actor, { lastName: 'line\nbreak' }), ['lastName']);
    await refused(() => accounts.user.removeOwn(actor, { currentPassword: '' }), ['currentPassword']);
    for (const identity of ['no-address', 'has space', 'roles@example.com'])
      assert.equal(await stores.users.findByIdentity(identity), null);
    assert.equal(await stores.admins.findByIdentity('has space'), null);
    const unchanged = await stores.users.findById(user.id);
    assert.deepEqual(unchanged, user);
  });

  test('the self-service flows refuse what the routes refuse', async () => {
    const flows = services.accountFlows;
    await refused(
      () => flows.register({ identity: 'short@example.com', password: 'short', passwordConfirm: 'short' }),
      ['password'],
    );
    assert.equal(await services.stores.users.findByIdentity('short@example.com'), null);
    for (const request of [flows.resendActivation, flows.recoverIdentity, flows.requestPasswordReset])
      await refused(() => request('not an address'), ['email']);
    await refused(() => flows.activate('A'.repeat(43), ''), ['password']);
    await refused(
      () => flows.resetPassword('A'.repeat(43), { password: 'short', passwordConfirm: 'short' }),
      ['password'],
    );
  });

  test('a listing refuses the queries the routes refuse, naming each parameter', async () => {
    const { accounts } = services;
    for (const [kind, parameters, names] of [
      ['user', { search: 'a\u0000b' }, ['search']],
      ['user', { search: 'x'.repeat(321), sort: 'roles' }, ['search', 'sort']],
      ['user', { role: 'admin' }, ['role']],
      ['admin', { role: 'root', status: 'gone' }, ['role', 'status']],
      ['admin', { page: '0', limit: '101' }, ['limit', 'page']],
      ['admin', { search: ['a', 'b'] }, ['search']],
    ] as const) {
      await assert.rejects(accounts[kind].list(OPERATOR, parameters), (error: unknown) => {
        assert.ok(error instanceof BadRequest, String(error));
        assert.equal(error.status, 400);
        assert.deepEqual(Object.keys(error.extensions.errors as object).sort(), names);
        return true;
      });
    }
    const hash = (password: string) => services.passwords.hash(password);
    await storeAccount(services.stores.admins, hash, { identity: 'Adm.Lead', roles: ['superuser'] });
    await storeAccount(services.stores.admins, hash, { identity: 'adm.night', roles: ['admin'] });
    const page = await accounts.admin.list(OPERATOR, { search: 'ADM', role: 'superuser', sort: '-identity' });
    assert.deepEqual(
      { ...page, items: page.items.map((a) => a.identity) },
      {
        items: ['Adm.Lead'],
        total: 1,
        page: 1,
        limit: 20,
      },
    );
  });

  test('a new account the check accepted is frozen: a changed copy is checked again', async () => {
    const accepted = checkNewAccount('admin', {
      identity: 'night.ops',
      password: PASSWORD,
      roles: ['admin'],
    });
    assert.throws(() => {
      (accepted as { password: string }).password = 'short';
    }, TypeError);
    assert.throws(() => accepted.roles?.push('superuser'), TypeError);
    await refused(
      () => services.accounts.admin.create(OPERATOR, { ...accepted, password: 'night.ops' }),
      ['password'],
    );
    const created = await services.accounts.admin.create(OPERATOR, accepted);
    assert.deepEqual(created.roles, ['admin']);
  });
});
