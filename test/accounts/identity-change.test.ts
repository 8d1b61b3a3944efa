/**
 * A user's verified change of address: `POST /users/my-account/identity` mails a link to the
 * new address and a notice to the old one; `PATCH /account/change-identity/{hash}`, with the
 * account's password, moves the account. Mail as `.eml` files (the embedded default); the
 * SMTP failures are in test/mail/smtp.test.ts.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, mock, test } from 'node:test';
import { IDENTITY_CHANGE_REQUESTED } from '../../src/http/routes/users-and-admins.ts';
import { FRONTEND_CLIENT, refreshGrant, request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir, recipients } from '../support/smtp.ts';
import { failsOnce } from '../support/stores.ts';
import { adminLogin, canUserLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

const APP_URL = 'https://api.example.test';
const HOUR = 3_600_000;
const CHANGE_LINK = '/account/change-identity/';

describeBackendSkip();

for (const backend of backends()) {
  describe(`a verified change of address (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, env: { APP_URL } });
    });
    after(() => server.close());
    afterEach(() => mock.timers.reset());

    const mails = () => readMailDir(server.logDir);
    let seq = 0;
    const address = (name: string) => `${name}-${++seq}@example.com`;

    async function newUser(name: string) {
      const identity = address(name);
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      return { account, identity, tokens: await userLogin(server.url, identity) };
    }

    const requestChange = (token: string | undefined, json: unknown) =>
      request(server.url, 'POST', '/users/my-account/identity', { token, json });
    const confirm = (path: string, json: unknown = { currentPassword: PASSWORD }) =>
      request(server.url, 'PATCH', path, { json });

    /** Asks for the change and answers the link mailed to the new address. */
    async function changeLink(token: string, identity: string) {
      const answer = await requestChange(token, { identity, currentPassword: PASSWORD });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      return linkIn(lastMailTo(await mails(), identity).parsed, CHANGE_LINK);
    }

    test('202 mails a link to the new address and a notice to the old; the link, with the password, moves the account once', async () => {
      const { account, identity: old, tokens } = await newUser('mover');
      const moved = address('moved');
      const before = (await mails()).length;
      const answer = await requestChange(tokens.access_token, { identity: moved, currentPassword: PASSWORD });
      assert.equal(answer.status, 202);
      assert.equal(answer.headers.get('content-type'), 'application/json');
      assert.deepEqual(answer.body, { message: IDENTITY_CHANGE_REQUESTED });

      const sent = (await mails()).slice(before);
      assert.deepEqual(sent.map(({ parsed }) => recipients(parsed)).sort(), [[moved], [old]].sort());
      const link = linkIn(lastMailTo(sent, moved).parsed, CHANGE_LINK);
      assert.ok(link.url.startsWith(`${APP_URL}${CHANGE_LINK}`), link.url);
      const notice = lastMailTo(sent, old).parsed;
      assert.ok(notice.text?.includes(moved), 'the notice names the new address');
      assert.ok(String(notice.html).includes(moved));
      assert.doesNotMatch(notice.text ?? '', /https?:\/\//, 'the notice carries no link');

      assert.equal(
        (await server.app.stores.users.findById(account.id))?.identity,
        old,
        'nothing changed yet',
      );
      assert.ok(await canUserLogin(server.url, old));
      assert.equal(await canUserLogin(server.url, moved), false);

      const wrong = await confirm(link.path, { currentPassword: 'not the password' });
      assert.equal(wrong.status, 400);
      assert.deepEqual(wrong.body.errors, { currentPassword: ['Is not the current password'] });
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, old);

      const done = await confirm(link.path);
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.headers.get('content-type'), 'application/hal+json');
      assert.equal(done.body.id, account.id);
      assert.equal(done.body.identity, moved);
      assert.ok(!('passwordHash' in done.body));
      assert.ok(await canUserLogin(server.url, moved));
      assert.equal(await canUserLogin(server.url, old), false);

      // The sign-in name changed: every session of the account ended.
      const own = await request(server.url, 'GET', '/users/my-account', { token: tokens.access_token });
      assert.equal(own.status, 401);
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, tokens.refresh_token)).status, 400);

      const again = await confirm(link.path);
      assert.equal(again.status, 404, 'the link works once');
      assert.match(
        String(again.body.detail),
        /change of address link is invalid, has expired or was already used/,
      );
    });

    test('the answer is the same whether or not the new address has an account, and so is the old notice', async () => {
      const { identity: old, tokens } = await newUser('asker');
      const { identity: taken } = await newUser('holder');
      const free = address('free');
      const before = (await mails()).length;
      const toTaken = await requestChange(tokens.access_token, {
        identity: taken,
        currentPassword: PASSWORD,
      });
      const toFree = await requestChange(tokens.access_token, { identity: free, currentPassword: PASSWORD });
      assert.deepEqual(
        { status: toTaken.status, body: toTaken.body },
        { status: toFree.status, body: toFree.body },
      );
      assert.equal(toTaken.status, 202);

      const sent = (await mails()).slice(before);
      const inUse = lastMailTo(sent, taken).parsed;
      assert.throws(() => linkIn(inUse, CHANGE_LINK), 'a taken address gets no link');
      assert.match(inUse.text ?? '', /already has an account/);
      assert.ok(linkIn(lastMailTo(sent, free).parsed, CHANGE_LINK));
      const notices = sent
        .filter(({ parsed }) => recipients(parsed).includes(old))
        .map(({ parsed }) => parsed);
      assert.equal(notices.length, 2);
      assert.equal(notices[0]?.subject, notices[1]?.subject);
      assert.equal(notices[0]?.text?.replace(taken, 'X'), notices[1]?.text?.replace(free, 'X'));
      assert.ok(await canUserLogin(server.url, old));
      assert.ok(await canUserLogin(server.url, taken));
    });

    test('refusals change nothing and send nothing', async () => {
      const { account, identity, tokens } = await newUser('refused');
      const admin = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      const target = address('target');
      const cases: [string | undefined, unknown, number, string[]][] = [
        [
          tokens.access_token,
          { identity: target, currentPassword: 'not the password' },
          400,
          ['currentPassword'],
        ],
        [tokens.access_token, { identity: target }, 400, ['currentPassword']],
        [tokens.access_token, { identity: 'not an address', currentPassword: PASSWORD }, 400, ['identity']],
        [tokens.access_token, { identity, currentPassword: PASSWORD }, 400, ['identity']],
        [
          tokens.access_token,
          { identity: target, currentPassword: PASSWORD, status: 'active' },
          400,
          ['status'],
        ],
        [undefined, { identity: target, currentPassword: PASSWORD }, 401, []],
        [admin.access_token, { identity: target, currentPassword: PASSWORD }, 403, []],
      ];
      const before = (await mails()).length;
      for (const [token, json, status, fields] of cases) {
        const answer = await requestChange(token, json);
        assert.equal(answer.status, status, JSON.stringify(json));
        assert.equal(answer.headers.get('content-type'), 'application/problem+json');
        if (fields.length > 0) assert.deepEqual(Object.keys(answer.body.errors as object), fields);
      }
      assert.equal((await mails()).length, before, 'no mail');
      assert.deepEqual(await server.app.stores.users.findById(account.id), account);
    });

    test('an address taken meanwhile is 409 and leaves the link usable; confirming kills every other link', async () => {
      const { account, identity: old, tokens } = await newUser('racer');
      const wanted = address('wanted');
      const link = await changeLink(tokens.access_token, wanted);
      const other = await changeLink(tokens.access_token, address('other'));
      assert.equal(
        (await request(server.url, 'POST', '/account/reset-password', { json: { email: old } })).status,
        200,
      );
      const reset = linkIn(lastMailTo(await mails(), old).parsed, '/account/reset-password/');

      const squatter = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: wanted.toUpperCase(),
      });
      const conflict = await confirm(link.path);
      assert.equal(conflict.status, 409);
      assert.equal(conflict.headers.get('content-type'), 'application/problem+json');
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, old);

      // The other account goes (deletion frees its address): the same link now works.
      const admin = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      const removed = await request(server.url, 'DELETE', `/users/${squatter.id}`, {
        token: admin.access_token,
      });
      assert.equal(removed.status, 204);
      const done = await confirm(link.path);
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.identity, wanted);

      assert.equal((await confirm(other.path)).status, 404, 'the other change of address link died');
      assert.equal((await request(server.url, 'GET', reset.path)).status, 404, 'so did the reset link');
    });

    test('one link used by concurrent confirmations: exactly one succeeds', async () => {
      const { tokens } = await newUser('concurrent');
      const link = await changeLink(tokens.access_token, address('concurrent-new'));
      const answers = await Promise.all(Array.from({ length: 5 }, () => confirm(link.path)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404, 404, 404, 404]);
    });

    test('wrong passwords are counted per link: after the fifth the link is void, the right one included', async () => {
      const { account, identity, tokens } = await newUser('guessed');
      const link = await changeLink(tokens.access_token, address('guesser'));
      for (let i = 1; i <= 5; i++) {
        const wrong = await confirm(link.path, { currentPassword: `guess number ${i}` });
        assert.equal(wrong.status, 400, `guess ${i}`);
        assert.deepEqual(wrong.body.errors, { currentPassword: ['Is not the current password'] });
      }
      const late = await confirm(link.path);
      assert.equal(late.status, 404, 'the link is void');
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, identity);

      // Four wrong ones leave it usable.
      const fresh = await changeLink(tokens.access_token, address('careful'));
      for (let i = 1; i <= 4; i++)
        assert.equal((await confirm(fresh.path, { currentPassword: `guess ${i}` })).status, 400);
      assert.equal((await confirm(fresh.path)).status, 200);
    });

    test('a write that fails after the link was taken puts it back: the same link works on retry', async () => {
      const { account, tokens } = await newUser('unlucky');
      const wanted = address('retried');
      const link = await changeLink(tokens.access_token, wanted);
      const users = server.app.stores.users;
      failsOnce(users, 'update');
      const failed = await confirm(link.path);
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      assert.notEqual((await users.findById(account.id))?.identity, wanted);
      const retried = await confirm(link.path);
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.equal(retried.body.identity, wanted);
    });

    test('a link taken by a failing use while another link moved the account stays dead when put back', async (t) => {
      const { account, tokens } = await newUser('raced');
      const typo = address('typo');
      const stranger = await changeLink(tokens.access_token, typo);
      const mine = await changeLink(tokens.access_token, address('real'));
      // The stranger's wrong password is checked only once the owner's confirmation is done.
      const passwords = server.app.passwords;
      const verify = passwords.verify.bind(passwords);
      let entered: () => void = () => undefined;
      const checking = new Promise<void>((resolve) => {
        entered = resolve;
      });
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      t.mock.method(passwords, 'verify', async (password: string, hash: string) => {
        if (password !== 'a stranger guessing') return verify(password, hash);
        entered();
        await held;
        return false;
      });
      const attempt = confirm(stranger.path, { currentPassword: 'a stranger guessing' });
      await checking;
      const moved = await confirm(mine.path);
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      release();
      assert.equal((await attempt).status, 400);
      assert.equal((await confirm(stranger.path)).status, 404, 'the link died with the change');
      assert.notEqual((await server.app.stores.users.findById(account.id))?.identity, typo);
    });

    test('when the other links cannot be killed, the change is not made: the link works on retry', async () => {
      const { account, identity, tokens } = await newUser('unkillable');
      const wanted = address('unkillable-new');
      const link = await changeLink(tokens.access_token, wanted);
      const oneTimeTokens = server.app.stores.oneTimeTokens;
      failsOnce(oneTimeTokens, 'deleteForAccount');
      const failed = await confirm(link.path);
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, identity, 'not moved');
      const retried = await confirm(link.path);
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.equal(retried.body.identity, wanted);
    });

    test('malformed, unknown and expired links are 404, and so is a link of an account that is no longer active', async () => {
      for (const hash of ['short', 'A'.repeat(43), `${'A'.repeat(42)}!`]) {
        const answer = await confirm(`${CHANGE_LINK}${encodeURIComponent(hash)}`);
        assert.equal(answer.status, 404, hash);
      }
      const { account, identity, tokens } = await newUser('late');
      const link = await changeLink(tokens.access_token, address('late-new'));
      mock.timers.enable({ apis: ['Date'], now: Date.now() + HOUR + 60_000 });
      assert.equal((await confirm(link.path)).status, 404, 'a link lives one hour');
      mock.timers.reset();

      const fresh = await changeLink(tokens.access_token, address('inactive-new'));
      await server.app.stores.users.update(account.id, { status: 'inactive' });
      assert.equal((await confirm(fresh.path)).status, 404);
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, identity);
    });

    test("an administrator still changes a user's address directly, which kills the user's pending links", async () => {
      const { account, tokens } = await newUser('managed');
      const link = await changeLink(tokens.access_token, address('asked-for'));
      const admin = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      const direct = address('set-by-admin');
      const changed = await request(server.url, 'PATCH', `/users/${account.id}`, {
        token: admin.access_token,
        json: { identity: direct },
      });
      assert.equal(changed.status, 200);
      assert.equal(changed.body.identity, direct);
      assert.equal((await confirm(link.path)).status, 404);
      assert.ok(await canUserLogin(server.url, direct));
    });

    test("an administrator's change of address is not made when the user's links cannot be killed", async () => {
      const { account, identity } = await newUser('admin-unkillable');
      const admin = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      failsOnce(server.app.stores.oneTimeTokens, 'deleteForAccount');
      const failed = await request(server.url, 'PATCH', `/users/${account.id}`, {
        token: admin.access_token,
        json: { identity: address('admin-unkillable-new') },
      });
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      assert.equal((await server.app.stores.users.findById(account.id))?.identity, identity, 'not changed');
    });
  });
}
