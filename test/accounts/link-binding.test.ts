/**
 * Password reset and activation links act only on an account that still has the address they
 * were mailed to. A change of address kills the account's links before it writes, so a link
 * mailed to the old address while the move is under way (the request found the account under
 * that address) would otherwise be saved alive and act on the moved account: whoever reads a
 * lost mailbox, warned of the move by its notice, could take the account over.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AccountChanges } from '../../src/accounts/model.ts';
import { digestOneTimeSecret, newOneTimeSecret } from '../../src/one-time-secrets.ts';
import { request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';
import { adminLogin, canUserLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

const APP_URL = 'https://api.example.test';
const RESET_LINK = '/account/reset-password/';
const NEW_PASSWORD = { password: 'attacker chose this 123', passwordConfirm: 'attacker chose this 123' };

describeBackendSkip();

/** A gate a mocked store method waits at: `entered` resolves when it arrives, `release()` lets it on. */
function gate() {
  let arrive: () => void = () => undefined;
  let release: () => void = () => undefined;
  const entered = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const open = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wait = () => {
    arrive();
    return open;
  };
  return { entered, release: () => release(), wait };
}

for (const backend of backends()) {
  describe(`mailed links are bound to the address they were mailed to (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, env: { APP_URL } });
    });
    after(() => server.close());

    let seq = 0;
    const address = (name: string) => `${name}-${++seq}@example.com`;
    const mails = () => readMailDir(server.logDir);
    const newAccount = (identity: string, status: 'active' | 'pending' = 'active') =>
      storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), { identity, status });
    const requestReset = (email: string) =>
      request(server.url, 'POST', '/account/reset-password', { json: { email } });
    const adminMove = async (id: string, identity: string) =>
      request(server.url, 'PATCH', `/users/${id}`, {
        token: (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token,
        json: { identity },
      });

    /** Holds the store write that moves an account to `moved` until the gate opens. */
    function holdMove(t: { mock: typeof import('node:test').mock }, moved: string) {
      const users = server.app.stores.users;
      const update = users.update.bind(users);
      const held = gate();
      t.mock.method(users, 'update', async (id: string, changes: AccountChanges) => {
        if (changes.identity === moved) await held.wait();
        return update(id, changes);
      });
      return held;
    }

    /** Holds the store save of the next link of `purpose` until the gate opens. */
    function holdSave(t: { mock: typeof import('node:test').mock }, purpose: string) {
      const tokens = server.app.stores.oneTimeTokens;
      const save = tokens.save.bind(tokens);
      const held = gate();
      t.mock.method(tokens, 'save', async (token: Parameters<typeof save>[0]) => {
        if (token.purpose === purpose) await held.wait();
        return save(token);
      });
      return held;
    }

    /** Uses the last reset link mailed to `old`: GET, then PATCH with a new password. */
    async function useResetLink(old: string) {
      const link = linkIn(lastMailTo(await mails(), old).parsed, RESET_LINK);
      const checked = await request(server.url, 'GET', link.path);
      const used = await request(server.url, 'PATCH', link.path, { json: NEW_PASSWORD });
      return { checked: checked.status, used: used.status };
    }

    test('a reset link asked for the old address while a confirmed move is written does not act after it', async (t) => {
      const old = address('lost-mailbox');
      const moved = address('new-mailbox');
      const account = await newAccount(old);
      const tokens = await userLogin(server.url, old);
      const asked = await request(server.url, 'POST', '/users/my-account/identity', {
        token: tokens.access_token,
        json: { identity: moved, currentPassword: PASSWORD },
      });
      assert.equal(asked.status, 202);
      const change = linkIn(lastMailTo(await mails(), moved).parsed, '/account/change-identity/');
      const held = holdMove(t, moved);
      const confirming = request(server.url, 'PATCH', change.path, { json: { currentPassword: PASSWORD } });
      await held.entered;
      assert.equal((await requestReset(old)).status, 200);
      held.release();
      assert.equal((await confirming).status, 200);
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, moved);
      assert.deepEqual(await useResetLink(old), { checked: 404, used: 404 });
      assert.ok(await canUserLogin(server.url, moved), 'the password is unchanged');
    });

    test("a reset link asked for the old address while an administrator's move is written does not act after it", async (t) => {
      const old = address('admin-old');
      const moved = address('admin-new');
      const account = await newAccount(old);
      const held = holdMove(t, moved);
      const moving = adminMove(account.id, moved);
      await held.entered;
      assert.equal((await requestReset(old)).status, 200);
      held.release();
      assert.equal((await moving).status, 200);
      assert.deepEqual(await useResetLink(old), { checked: 404, used: 404 });
      assert.ok(await canUserLogin(server.url, moved), 'the password is unchanged');
    });

    test('a reset link found under the old address and saved after the whole move is refused', async (t) => {
      const old = address('slow-save-old');
      const moved = address('slow-save-new');
      const account = await newAccount(old);
      const held = holdSave(t, 'reset');
      const asking = requestReset(old);
      await held.entered;
      assert.equal((await adminMove(account.id, moved)).status, 200);
      held.release();
      assert.equal((await asking).status, 200);
      assert.deepEqual(await useResetLink(old), { checked: 404, used: 404 });
      assert.ok(await canUserLogin(server.url, moved), 'the password is unchanged');
    });

    test('an activation link found under the old address and saved after the move is refused', async (t) => {
      const old = address('pending-old');
      const moved = address('pending-new');
      const account = await newAccount(old, 'pending');
      const held = holdSave(t, 'activation');
      const asking = request(server.url, 'POST', '/account/activate', { json: { email: old } });
      await held.entered;
      assert.equal((await adminMove(account.id, moved)).status, 200);
      held.release();
      assert.equal((await asking).status, 200);
      const link = linkIn(lastMailTo(await mails(), old).parsed, '/account/activate/');
      const used = await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } });
      assert.equal(used.status, 404);
      assert.equal((await server.app.stores.users.findById(account.id))?.status, 'pending');
    });

    test('the address compares as identities do: a change of case alone leaves the link working', async (t) => {
      const old = address('case');
      const account = await newAccount(old);
      const held = holdSave(t, 'reset');
      const asking = requestReset(old);
      await held.entered;
      assert.equal((await adminMove(account.id, old.toUpperCase())).status, 200);
      held.release();
      assert.equal((await asking).status, 200);
      assert.deepEqual(await useResetLink(old), { checked: 200, used: 200 });
      assert.ok(await canUserLogin(server.url, old, NEW_PASSWORD.password));
    });

    test('a link saved before links named their address keeps working until it expires', async () => {
      const identity = address('legacy');
      const account = await newAccount(identity);
      const { secret, digest } = newOneTimeSecret();
      assert.equal(digestOneTimeSecret(secret), digest);
      await server.app.stores.oneTimeTokens.save({
        purpose: 'reset',
        digest,
        accountId: account.id,
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      const path = `${RESET_LINK}${secret}`;
      assert.equal((await request(server.url, 'GET', path)).status, 200);
      assert.equal((await request(server.url, 'PATCH', path, { json: NEW_PASSWORD })).status, 200);
      assert.ok(await canUserLogin(server.url, identity, NEW_PASSWORD.password));
    });
  });
}
