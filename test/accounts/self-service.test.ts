import assert from 'node:assert/strict';
import { after, afterEach, before, describe, mock, test } from 'node:test';
import { ANSWERS } from '../../src/http/routes/self-service.ts';
import { FRONTEND_CLIENT, passwordGrant, refreshGrant, request, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir, recipients } from '../support/smtp.ts';
import { failsOnce } from '../support/stores.ts';
import { canUserLogin, PASSWORD, registerAndActivate, storeAccount } from './fixtures.ts';

const APP_URL = 'https://api.example.test';
const HOUR = 3_600_000;

describeBackendSkip();

for (const backend of backends()) {
  describe(`user self-service: registration and activation (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, env: { APP_URL } });
    });
    after(() => server.close());
    afterEach(() => mock.timers.reset());

    const mails = () => readMailDir(server.logDir);
    const register = (json: Record<string, unknown>, headers?: Record<string, string>) =>
      request(server.url, 'POST', '/account/register', { json, headers });

    test('register creates a pending account (201, Location) and mails an activation link; activating lets it sign in', async () => {
      const identity = 'ada@example.com';
      const response = await register({
        identity,
        password: PASSWORD,
        passwordConfirm: PASSWORD,
        firstName: 'Ada',
        lastName: 'Lovelace',
      });
      assert.equal(response.status, 201);
      assert.equal(response.headers.get('content-type'), 'application/hal+json');
      assert.equal(response.headers.get('location'), `/users/${response.body.id}`);
      assert.equal(response.body.status, 'pending');
      assert.equal(response.body.firstName, 'Ada');
      assert.ok(!('passwordHash' in response.body));
      assert.equal(await canUserLogin(server.url, identity), false, 'a pending account cannot sign in');

      const mail = lastMailTo(await mails(), identity).parsed;
      assert.match(mail.subject ?? '', /Activate/);
      assert.ok(mail.html, 'has an HTML part');
      const link = linkIn(mail, '/account/activate/');
      assert.ok(link.url.startsWith(`${APP_URL}/account/activate/`), link.url);
      assert.ok(String(mail.html).includes(link.url), 'the HTML part carries the same link');
      assert.match(mail.text ?? '', /Hello Ada Lovelace/);

      const activated = await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } });
      assert.equal(activated.status, 200);
      assert.equal(activated.headers.get('content-type'), 'application/hal+json');
      assert.equal(activated.body.status, 'active');
      assert.equal(activated.body.id, response.body.id);
      assert.ok(await canUserLogin(server.url, identity));

      const again = await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } });
      assert.equal(again.status, 404, 'an activation link works once');
      assert.match(String(again.body.detail), /invalid, has expired or was already used/);
    });

    test('invalid bodies are 400 with an error per field, and create nothing', async () => {
      const cases: [Record<string, unknown>, string[]][] = [
        [{ identity: 'not-an-email', password: PASSWORD, passwordConfirm: PASSWORD }, ['identity']],
        [{ identity: 'short@example.com', password: 'short', passwordConfirm: 'short' }, ['password']],
        [{ identity: 'long@example.com', password: 'x'.repeat(1025), passwordConfirm: 'x' }, ['password']],
        [
          { identity: 'mismatch@example.com', password: PASSWORD, passwordConfirm: `${PASSWORD}!` },
          ['passwordConfirm'],
        ],
        [{ identity: 'nocopy@example.com', password: PASSWORD }, ['passwordConfirm']],
        [
          { identity: 'same@example.com', password: 'Same@Example.com', passwordConfirm: 'Same@Example.com' },
          ['password'],
        ],
        [
          {
            identity: 'names@example.com',
            password: PASSWORD,
            passwordConfirm: PASSWORD,
            firstName: 'x'.repeat(101),
          },
          ['firstName'],
        ],
        [
          { identity: `${'a'.repeat(310)}@example.com`, password: PASSWORD, passwordConfirm: PASSWORD },
          ['identity'],
        ],
        [
          { identity: 'extra@example.com', password: PASSWORD, passwordConfirm: PASSWORD, status: 'active' },
          ['status'],
        ],
        [{}, ['identity', 'password', 'passwordConfirm']],
      ];
      for (const [json, fields] of cases) {
        const response = await register(json);
        assert.equal(response.status, 400, JSON.stringify(json).slice(0, 80));
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        const errors = response.body.errors as Record<string, string[]>;
        assert.deepEqual(Object.keys(errors).sort(), [...fields].sort(), JSON.stringify(errors));
        for (const messages of Object.values(errors))
          assert.ok(messages.length > 0 && typeof messages[0] === 'string');
        if (typeof json.identity === 'string')
          assert.equal(await server.app.stores.users.findByIdentity(json.identity), null);
      }
    });

    test('a taken identity is 409, compared case-insensitively', async () => {
      const response = await register({
        identity: SEEDED_USER.username.toUpperCase(),
        password: PASSWORD,
        passwordConfirm: PASSWORD,
      });
      assert.equal(response.status, 409);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
    });

    test('the routes are public: a signed-in caller may use them too (the Authorization header is not read)', async () => {
      const response = await register(
        { identity: 'signed-in@example.com', password: PASSWORD, passwordConfirm: PASSWORD },
        { Authorization: 'Bearer not-even-a-token' },
      );
      assert.equal(response.status, 201);
    });

    test('resending the activation link answers the same whether or not the address is pending', async () => {
      const pending = 'resend@example.com';
      assert.equal(
        (await register({ identity: pending, password: PASSWORD, passwordConfirm: PASSWORD })).status,
        201,
      );
      const before = (await mails()).length;
      const answers = [];
      for (const email of [pending, 'nobody@example.com', SEEDED_USER.username]) {
        const response = await request(server.url, 'POST', '/account/activate', { json: { email } });
        answers.push({ status: response.status, body: response.body });
      }
      assert.deepEqual(answers[0], { status: 200, body: { message: ANSWERS.resendActivation } });
      assert.deepEqual(answers[1], answers[0]);
      assert.deepEqual(answers[2], answers[0]);
      const sent = (await mails()).slice(before);
      assert.deepEqual(
        sent.map(({ parsed }) => recipients(parsed)),
        [[pending]],
        'only the pending account gets a message',
      );
      const activated = await request(
        server.url,
        'PATCH',
        linkIn(lastMailTo(sent, pending).parsed, '/account/activate/').path,
        { json: { password: PASSWORD } },
      );
      assert.equal(activated.status, 200);
      const invalid = await request(server.url, 'POST', '/account/activate', { json: { email: 'nope' } });
      assert.equal(invalid.status, 400);
      assert.ok((invalid.body.errors as Record<string, unknown>).email);
    });

    test('an address registered by someone else cannot be taken over: the owner re-registers it', async () => {
      const identity = 'victim@example.com';
      const attacker = 'attacker-chosen-password';
      assert.equal((await register({ identity, password: attacker, passwordConfirm: attacker })).status, 201);
      const attackerLink = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      // The owner, getting the attacker's mail, cannot activate it with a password of their own.
      const refused = await request(server.url, 'PATCH', attackerLink.path, { json: { password: PASSWORD } });
      assert.equal(refused.status, 400);
      assert.ok((refused.body.errors as Record<string, unknown>).password);
      // Registering the still-pending address again replaces that registration and its links.
      const again = await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      assert.equal(again.status, 201);
      const gone = await request(server.url, 'PATCH', attackerLink.path, { json: { password: attacker } });
      assert.equal(gone.status, 404, "the attacker's link died with the registration it belonged to");
      const ownerLink = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      const activated = await request(server.url, 'PATCH', ownerLink.path, { json: { password: PASSWORD } });
      assert.equal(activated.status, 200);
      assert.ok(await canUserLogin(server.url, identity, PASSWORD));
      assert.equal(await canUserLogin(server.url, identity, attacker), false);
      // Once active, the address is taken.
      assert.equal((await register({ identity, password: attacker, passwordConfirm: attacker })).status, 409);
    });

    test('a wrong password at activation leaves the link usable', async () => {
      const identity = 'typo@example.com';
      await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      assert.equal(
        (await request(server.url, 'PATCH', path, { json: { password: 'not-it-at-all' } })).status,
        400,
      );
      assert.equal((await request(server.url, 'PATCH', path, { json: { password: PASSWORD } })).status, 200);
    });

    test('a write that fails after the activation link was taken puts it back: the same link works on retry', async () => {
      const identity = 'activation-retry@example.com';
      await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      failsOnce(server.app.stores.users, 'update');
      const failed = await request(server.url, 'PATCH', path, { json: { password: PASSWORD } });
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      const retried = await request(server.url, 'PATCH', path, { json: { password: PASSWORD } });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.ok(await canUserLogin(server.url, identity));
    });

    test('a read that fails after the activation link was taken puts it back: the same link works on retry', async (t) => {
      const identity = 'activation-read-retry@example.com';
      await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      const users = server.app.stores.users;
      const findById = users.findById.bind(users);
      // The activation reads the account once to check the password, and again once it took the link.
      let reads = 0;
      t.mock.method(users, 'findById', async (id: string) => {
        if (++reads === 2) throw new Error('the store failed mid-request');
        return findById(id);
      });
      const failed = await request(server.url, 'PATCH', path, { json: { password: PASSWORD } });
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      assert.equal(reads, 2);
      const retried = await request(server.url, 'PATCH', path, { json: { password: PASSWORD } });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.ok(await canUserLogin(server.url, identity));
    });

    test('one activation link used by concurrent requests: exactly one succeeds', async () => {
      const identity = 'race@example.com';
      await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => request(server.url, 'PATCH', path, { json: { password: PASSWORD } })),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404, 404, 404, 404]);
    });

    test('malformed, unknown and expired activation links are 404', async () => {
      for (const hash of ['short', 'A'.repeat(43), `${'A'.repeat(42)}!`]) {
        const response = await request(server.url, 'PATCH', `/account/activate/${encodeURIComponent(hash)}`, {
          json: { password: PASSWORD },
        });
        assert.equal(response.status, 404, hash);
      }
      const identity = 'late@example.com';
      await register({ identity, password: PASSWORD, passwordConfirm: PASSWORD });
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      // ACTIVATION_TTL defaults to 24 hours.
      mock.timers.enable({ apis: ['Date'], now: Date.now() + 24 * HOUR + 60_000 });
      assert.equal((await request(server.url, 'PATCH', path, { json: { password: PASSWORD } })).status, 404);
      mock.timers.reset();
      assert.equal((await server.app.stores.users.findByIdentity(identity))?.status, 'pending');
    });

    test('identity recovery answers the same whether or not the address exists, and mails the identity', async () => {
      const before = (await mails()).length;
      const known = await request(server.url, 'POST', '/account/recover-identity', {
        json: { email: SEEDED_USER.username },
      });
      const unknown = await request(server.url, 'POST', '/account/recover-identity', {
        json: { email: 'stranger@example.com' },
      });
      assert.equal(known.status, 200);
      assert.deepEqual(known.body, { message: ANSWERS.recoverIdentity });
      assert.deepEqual(
        { status: unknown.status, body: unknown.body },
        { status: known.status, body: known.body },
      );
      const sent = (await mails()).slice(before);
      assert.equal(sent.length, 1);
      const reminder = lastMailTo(sent, SEEDED_USER.username).parsed;
      assert.ok(reminder.text?.includes(SEEDED_USER.username));
      assert.ok(reminder.html);
    });
  });

  describe(`user self-service: password reset (${backend})`, () => {
    let server: TestServer;
    const identity = 'reset@example.com';
    before(async () => {
      server = await startTestServer({ backend, env: { APP_URL } });
      await registerAndActivate(server, identity);
    });
    after(() => server.close());
    afterEach(() => mock.timers.reset());

    const mails = () => readMailDir(server.logDir);
    async function requestReset(email = identity) {
      return request(server.url, 'POST', '/account/reset-password', { json: { email } });
    }
    async function resetLink() {
      assert.equal((await requestReset()).status, 200);
      return linkIn(lastMailTo(await mails(), identity).parsed, '/account/reset-password/');
    }

    test('a reset request answers the same whether or not the address has an active account', async () => {
      await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: 'pending-reset@example.com',
        status: 'pending',
      });
      const before = (await mails()).length;
      const answers = [];
      for (const email of [identity, 'ghost@example.com', 'pending-reset@example.com']) {
        const response = await requestReset(email);
        answers.push({ status: response.status, body: response.body });
      }
      assert.deepEqual(answers[0], { status: 200, body: { message: ANSWERS.requestPasswordReset } });
      assert.deepEqual(answers[1], answers[0]);
      assert.deepEqual(answers[2], answers[0]);
      const sent = (await mails()).slice(before);
      assert.deepEqual(
        sent.map(({ parsed }) => recipients(parsed)),
        [[identity]],
      );
      const link = linkIn(lastMailTo(sent, identity).parsed, '/account/reset-password/');
      assert.ok(link.url.startsWith(`${APP_URL}/account/reset-password/`));
    });

    test('GET tells whether a link is usable; a rejected new password does not use the link up', async () => {
      const link = await resetLink();
      const check = await request(server.url, 'GET', link.path);
      assert.equal(check.status, 200);
      assert.equal(check.body.valid, true);
      assert.ok(new Date(String(check.body.expiresAt)).getTime() > Date.now());
      assert.equal(
        (await request(server.url, 'GET', '/account/reset-password/nothing-like-a-hash')).status,
        404,
      );
      assert.equal(
        (await request(server.url, 'GET', `/account/reset-password/${'b'.repeat(43)}`)).status,
        404,
      );

      for (const [json, field] of [
        [{ password: 'new password 1', passwordConfirm: 'new password 2' }, 'passwordConfirm'],
        [{ password: 'short', passwordConfirm: 'short' }, 'password'],
        [{ password: identity, passwordConfirm: identity }, 'password'],
      ] as const) {
        const response = await request(server.url, 'PATCH', link.path, { json });
        assert.equal(response.status, 400);
        assert.ok((response.body.errors as Record<string, unknown>)[field], JSON.stringify(response.body));
      }
      assert.equal((await request(server.url, 'GET', link.path)).status, 200, 'still usable');
    });

    test('a reset sets the new password once, revokes refresh tokens and kills the other links', async () => {
      const tokens = await passwordGrant(server.url, FRONTEND_CLIENT, {
        username: identity,
        password: PASSWORD,
      });
      const first = await resetLink();
      const second = await resetLink();
      const newPassword = 'a brand new password';
      const response = await request(server.url, 'PATCH', second.path, {
        json: { password: newPassword, passwordConfirm: newPassword },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, { message: ANSWERS.passwordReset });
      assert.equal(await canUserLogin(server.url, identity, PASSWORD), false);
      assert.ok(await canUserLogin(server.url, identity, newPassword));
      assert.equal((await refreshGrant(server.url, FRONTEND_CLIENT, tokens.refresh_token)).status, 400);

      const reuse = await request(server.url, 'PATCH', second.path, {
        json: { password: 'yet another password', passwordConfirm: 'yet another password' },
      });
      assert.equal(reuse.status, 404, 'single use');
      assert.equal((await request(server.url, 'GET', second.path)).status, 404);
      assert.equal((await request(server.url, 'GET', first.path)).status, 404, 'the older link is gone too');
      assert.ok(await canUserLogin(server.url, identity, newPassword));
    });

    test('a write that fails after the link was taken puts it back: the same link works on retry', async () => {
      const unlucky = 'reset-retry@example.com';
      await registerAndActivate(server, unlucky);
      assert.equal((await requestReset(unlucky)).status, 200);
      const link = linkIn(lastMailTo(await mails(), unlucky).parsed, '/account/reset-password/');
      failsOnce(server.app.stores.users, 'update');
      const password = 'retried new password';
      const failed = await request(server.url, 'PATCH', link.path, {
        json: { password, passwordConfirm: password },
      });
      assert.ok(failed.status >= 500, JSON.stringify(failed.body));
      assert.ok(await canUserLogin(server.url, unlucky, PASSWORD), 'nothing changed');
      assert.equal((await request(server.url, 'GET', link.path)).status, 200, 'the link is usable again');
      const retried = await request(server.url, 'PATCH', link.path, {
        json: { password, passwordConfirm: password },
      });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.ok(await canUserLogin(server.url, unlucky, password));
    });

    test('one reset link used by concurrent requests: exactly one succeeds', async () => {
      const link = await resetLink();
      const answers = await Promise.all(
        ['concurrent one', 'concurrent two', 'concurrent three'].map((password) =>
          request(server.url, 'PATCH', link.path, { json: { password, passwordConfirm: password } }),
        ),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404, 404]);
      const winners = ['concurrent one', 'concurrent two', 'concurrent three'].filter(
        (_, i) => answers[i]?.status === 200,
      );
      assert.ok(await canUserLogin(server.url, identity, winners[0]));
    });

    test('an expired reset link is refused (RESET_PASSWORD_TTL, default one hour)', async () => {
      const link = await resetLink();
      mock.timers.enable({ apis: ['Date'], now: Date.now() + HOUR + 60_000 });
      assert.equal((await request(server.url, 'GET', link.path)).status, 404);
      const response = await request(server.url, 'PATCH', link.path, {
        json: { password: 'too late password', passwordConfirm: 'too late password' },
      });
      assert.equal(response.status, 404);
    });
  });
}
