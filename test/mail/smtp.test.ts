import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { canUserLogin, PASSWORD, storeAccount, userLogin } from '../accounts/fixtures.ts';
import { freePort } from '../support/backends.ts';
import { request, SEEDED_USER } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, recipients, startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';

const APP_URL = 'https://accounts.example.test';
const MAIL_FROM = 'Token Service <no-reply@example.test>';

for (const backend of backends()) {
  describe(`mail over SMTP (${backend})`, () => {
    let smtp: TestSmtpServer;
    let server: TestServer;
    before(async () => {
      smtp = await startSmtpServer();
      server = await startTestServer({ backend, env: { SMTP_URL: smtp.url, APP_URL, MAIL_FROM } });
    });
    after(async () => {
      await server.close();
      await smtp.close();
    });
    afterEach(() => {
      smtp.refuse = 'none';
      smtp.refuseRecipients.clear();
    });

    const register = (identity: string) =>
      request(server.url, 'POST', '/account/register', {
        json: { identity, password: PASSWORD, passwordConfirm: PASSWORD, firstName: 'Zoë' },
      });

    test('register → the activation mail arrives → following its link activates → login works', async () => {
      const identity = 'smtp-user@example.com';
      const registered = await register(identity);
      assert.equal(registered.status, 201);
      const mail = lastMailTo(smtp.received, identity);
      assert.deepEqual(mail.to, [identity]);
      assert.deepEqual(
        mail.parsed.from?.value.map(({ name, address }) => ({ name, address })),
        [{ name: 'Token Service', address: 'no-reply@example.test' }],
      );
      assert.deepEqual(recipients(mail.parsed), [identity]);
      assert.match(mail.raw.toString(), /^Content-Type: multipart\/alternative/im, 'a text and an HTML part');
      assert.match(mail.parsed.text ?? '', /Hello Zoë/);
      assert.match(String(mail.parsed.html), /Hello Zoë/);
      const link = linkIn(mail.parsed, '/account/activate/');
      assert.ok(link.url.startsWith(`${APP_URL}/account/activate/`));
      assert.ok(String(mail.parsed.html).includes(link.url));

      assert.equal(await canUserLogin(server.url, identity), false);
      const activated = await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } });
      assert.equal(activated.status, 200);
      assert.ok(await canUserLogin(server.url, identity));
    });

    test('a refused recipient makes the registration fail with 503 and leaves no account: the retry works', async () => {
      const identity = 'refused-rcpt@example.com';
      smtp.refuse = 'rcpt';
      const failed = await register(identity);
      assert.equal(failed.status, 503);
      assert.equal(failed.headers.get('content-type'), 'application/problem+json');
      assert.equal(failed.body.detail, 'The mail could not be sent; try again later');
      assert.equal(await server.app.stores.users.findByIdentity(identity), null);
      smtp.refuse = 'none';
      const retried = await register(identity);
      assert.equal(retried.status, 201);
      assert.ok(lastMailTo(smtp.received, identity));
    });

    test('a message refused after DATA: 503, and the link it carried activates nothing', async () => {
      const identity = 'refused-data@example.com';
      smtp.refuse = 'data';
      assert.equal((await register(identity)).status, 503);
      const link = linkIn(lastMailTo(smtp.refused, identity).parsed, '/account/activate/');
      assert.equal(await server.app.stores.users.findByIdentity(identity), null);
      assert.equal(
        (await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } })).status,
        404,
      );
    });

    test('a failed reset mail leaves no usable link and the password unchanged', async () => {
      const identity = 'reset-smtp@example.com';
      await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), { identity });
      smtp.refuse = 'data';
      const failed = await request(server.url, 'POST', '/account/reset-password', {
        json: { email: identity },
      });
      assert.equal(failed.status, 503);
      const link = linkIn(lastMailTo(smtp.refused, identity).parsed, '/account/reset-password/');
      assert.equal((await request(server.url, 'GET', link.path)).status, 404);
      const used = await request(server.url, 'PATCH', link.path, {
        json: { password: 'hijacked password', passwordConfirm: 'hijacked password' },
      });
      assert.equal(used.status, 404);
      assert.ok(await canUserLogin(server.url, identity));

      smtp.refuse = 'none';
      assert.equal(
        (await request(server.url, 'POST', '/account/reset-password', { json: { email: identity } })).status,
        200,
      );
      const good = linkIn(lastMailTo(smtp.received, identity).parsed, '/account/reset-password/');
      const reset = await request(server.url, 'PATCH', good.path, {
        json: { password: 'chosen by the owner', passwordConfirm: 'chosen by the owner' },
      });
      assert.equal(reset.status, 200);
      assert.ok(await canUserLogin(server.url, identity, 'chosen by the owner'));
    });

    test('a failed activation resend leaves the account pending and no usable link', async () => {
      const identity = 'resend-smtp@example.com';
      assert.equal((await register(identity)).status, 201);
      smtp.refuse = 'data';
      const failed = await request(server.url, 'POST', '/account/activate', { json: { email: identity } });
      assert.equal(failed.status, 503);
      const link = linkIn(lastMailTo(smtp.refused, identity).parsed, '/account/activate/');
      assert.equal(
        (await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } })).status,
        404,
      );
      assert.equal((await server.app.stores.users.findByIdentity(identity))?.status, 'pending');
    });

    /** A user signed in, asking to move to `moved`. */
    async function changeOfAddress(old: string, moved: string) {
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity: old,
      });
      const { access_token } = await userLogin(server.url, old);
      const ask = (identity = moved) =>
        request(server.url, 'POST', '/users/my-account/identity', {
          token: access_token,
          json: { identity, currentPassword: PASSWORD },
        });
      return { account, ask };
    }

    test('a change of address whose link cannot be sent: 503, no usable link, nothing changed', async () => {
      const moved = 'moved-refused@example.com';
      const { account, ask } = await changeOfAddress('moving-refused@example.com', moved);
      smtp.refuse = 'data';
      const failed = await ask();
      assert.equal(failed.status, 503);
      assert.equal(failed.headers.get('content-type'), 'application/problem+json');
      const link = linkIn(lastMailTo(smtp.refused, moved).parsed, '/account/change-identity/');
      const used = await request(server.url, 'PATCH', link.path, { json: { currentPassword: PASSWORD } });
      assert.equal(used.status, 404);
      assert.deepEqual(await server.app.stores.users.findById(account.id), account);
      // An address with an account gets a message instead of the link: its failure is a 503 too.
      assert.equal((await ask(SEEDED_USER.username)).status, 503);
      smtp.refuse = 'none';
      assert.equal((await ask()).status, 202, 'the same request can be retried');
    });

    test('a change of address whose notice to the old address fails: 503, and the delivered link changes nothing', async () => {
      const old = 'moving-notice@example.com';
      const moved = 'moved-notice@example.com';
      const { account, ask } = await changeOfAddress(old, moved);
      smtp.refuseRecipients.add(old);
      assert.equal((await ask()).status, 503);
      const delivered = linkIn(lastMailTo(smtp.received, moved).parsed, '/account/change-identity/');
      const used = await request(server.url, 'PATCH', delivered.path, {
        json: { currentPassword: PASSWORD },
      });
      assert.equal(used.status, 404, 'no change of address without the notice to the old address');
      assert.deepEqual(await server.app.stores.users.findById(account.id), account);
      assert.ok(await canUserLogin(server.url, old));
    });

    test('the identity reminder arrives with the identity in both parts', async () => {
      const identity = 'forgetful@example.com';
      await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), { identity });
      const response = await request(server.url, 'POST', '/account/recover-identity', {
        json: { email: identity },
      });
      assert.equal(response.status, 200);
      const mail = lastMailTo(smtp.received, identity).parsed;
      assert.match(mail.subject ?? '', /sign-in identity/);
      assert.ok(mail.text?.includes(identity));
      assert.ok(String(mail.html).includes(identity));
    });
  });
}

describe('mail over SMTP: an unreachable server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { SMTP_URL: `smtp://127.0.0.1:${await freePort()}` } });
  });
  after(() => server.close());

  test('is a 503 problem and leaves no account behind', async () => {
    const response = await request(server.url, 'POST', '/account/register', {
      json: { identity: 'nobody-home@example.com', password: PASSWORD, passwordConfirm: PASSWORD },
    });
    assert.equal(response.status, 503);
    assert.equal(await server.app.stores.users.findByIdentity('nobody-home@example.com'), null);
  });
});
