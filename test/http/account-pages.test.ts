/**
 * The account pages over plain HTTP (docs/api.md, "Pages for people"): what a browser gets at
 * the account routes' paths, what their forms do, and that JSON requests there still get the
 * API as before. test/browser/account-journeys.test.ts walks the same pages in Chromium.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ANSWERS } from '../../src/http/routes/self-service.ts';
import {
  canUserLogin,
  PASSWORD,
  registerAndActivate,
  storeAccount,
  userLogin,
} from '../accounts/fixtures.ts';
import { authorizationQuery, pkce, registerClient, superuserToken } from '../support/authorization.ts';
import { request } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

/** What Chromium sends when it opens a link. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const NEW_PASSWORD = 'a brand new passphrase';

interface Page {
  status: number;
  headers: Headers;
  html: string;
}

async function page(response: Response): Promise<Page> {
  return { status: response.status, headers: response.headers, html: await response.text() };
}

/** The one-time value of the form on a page. */
function csrfTokenOf(html: string): string {
  const match = /name="csrf_token" value="([^"]+)"/.exec(html);
  assert.ok(match?.[1], `the page has a form: ${html}`);
  return match[1];
}

/** The text of the error shown beside a field, or undefined when there is none. */
function fieldError(html: string, field: string): string | undefined {
  return new RegExp(`<p class="error field-error" id="${field}-error">([^<]*)</p>`).exec(html)?.[1];
}

/** The "Back to sign-in" link of a page, or null. */
function backLink(html: string): string | null {
  const match = /<a href="([^"]*)">Back to sign-in<\/a>/.exec(html);
  return match?.[1] === undefined ? null : match[1].replaceAll('&#38;', '&');
}

function assertPageHeaders(headers: Headers): void {
  assert.equal(headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(headers.get('content-security-policy') ?? '', /^default-src 'none'; .*frame-ancestors 'none'/);
  assert.match(headers.get('content-security-policy') ?? '', /form-action 'self';/);
  assert.equal(headers.get('cache-control'), 'no-store');
  assert.equal(headers.get('x-frame-options'), 'DENY');
  assert.equal(headers.get('access-control-allow-origin'), null);
}

describeBackendSkip();

for (const backend of backends()) {
  describe(`account pages (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, ownAppUrl: true, env: { CORS_ORIGINS: '*' } });
    });
    after(() => server.close());

    const mails = () => readMailDir(server.logDir);
    const open = async (path: string, accept = BROWSER_ACCEPT) =>
      page(await fetch(`${server.url}${path}`, { headers: { Accept: accept } }));
    /** Posts a page's form as the page's own browser would. */
    const post = async (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
      page(
        await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/x-www-form-urlencoded',
            Origin: server.url,
            'Sec-Fetch-Site': 'same-origin',
            ...headers,
          },
          body: new URLSearchParams(form).toString(),
          redirect: 'manual',
        }),
      );
    /** Opens a page and posts its form with `fields`. */
    const fill = async (path: string, fields: Record<string, string>) => {
      const shown = await open(path);
      assert.equal(shown.status, 200, shown.html);
      return post(path, { csrf_token: csrfTokenOf(shown.html), ...fields });
    };

    test('a browser opening /account/register gets the page; its form registers and mails the activation link', async () => {
      const shown = await open('/account/register');
      assert.equal(shown.status, 200);
      assertPageHeaders(shown.headers);
      assert.match(shown.html, /<h1>Create an account<\/h1>/);
      for (const [id, label] of [
        ['identity', 'Email address'],
        ['password', 'Password'],
        ['passwordConfirm', 'Repeat the password'],
      ])
        assert.match(shown.html, new RegExp(`<label for="${id}">${label}</label>\\n<input id="${id}"`));
      assert.doesNotMatch(shown.html, /<script/);

      const identity = 'page-registered@example.com';
      const done = await post('/account/register', {
        csrf_token: csrfTokenOf(shown.html),
        identity,
        password: PASSWORD,
        passwordConfirm: PASSWORD,
        firstName: 'Grace',
        lastName: '',
      });
      assert.equal(done.status, 200, done.html);
      assertPageHeaders(done.headers);
      assert.match(done.html, /We sent an activation link/);
      const link = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');
      assert.equal(link.url, `${server.url}/account/activate/${link.hash}`);
      assert.match(lastMailTo(await mails(), identity).parsed.text ?? '', /Hello Grace/);
    });

    test('the register page shows each refusal beside its field, keeps what was typed but never a password', async () => {
      const refused = await fill('/account/register', {
        identity: 'mismatch@example.com',
        password: PASSWORD,
        passwordConfirm: 'something else entirely',
      });
      assert.equal(refused.status, 400);
      assertPageHeaders(refused.headers);
      assert.equal(fieldError(refused.html, 'passwordConfirm'), 'Does not match the password');
      assert.match(
        refused.html,
        /id="passwordConfirm"[^>]*aria-invalid="true" aria-describedby="passwordConfirm-error"/,
      );
      assert.match(refused.html, /value="mismatch@example.com"/);
      assert.ok(!refused.html.includes(PASSWORD), 'no password is sent back');

      const invalid = await post('/account/register', {
        csrf_token: csrfTokenOf(refused.html),
        identity: 'not an address',
        password: PASSWORD,
        passwordConfirm: PASSWORD,
      });
      assert.equal(invalid.status, 400);
      assert.ok(fieldError(invalid.html, 'identity'), invalid.html);

      await registerAndActivate(server, 'taken-on-page@example.com');
      const taken = await post('/account/register', {
        csrf_token: csrfTokenOf(invalid.html),
        identity: 'taken-on-page@example.com',
        password: PASSWORD,
        passwordConfirm: PASSWORD,
      });
      assert.equal(taken.status, 409);
      assert.match(fieldError(taken.html, 'identity') ?? '', /already exists/);
    });

    test('the activation link opens a page that asks for the password; a wrong one is shown beside it and keeps the link', async () => {
      const identity = 'activate-on-page@example.com';
      const registered = await request(server.url, 'POST', '/account/register', {
        json: { identity, password: PASSWORD, passwordConfirm: PASSWORD },
      });
      assert.equal(registered.status, 201);
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/activate/');

      const wrong = await fill(path, { password: 'not the registration password' });
      assert.equal(wrong.status, 400);
      assert.equal(fieldError(wrong.html, 'password'), 'Does not match the password chosen at registration');
      assert.equal(await canUserLogin(server.url, identity), false);

      const done = await post(path, { csrf_token: csrfTokenOf(wrong.html), password: PASSWORD });
      assert.equal(done.status, 200, done.html);
      assert.match(done.html, /Your account is active/);
      assert.match(done.html, new RegExp(identity));
      assert.ok(await canUserLogin(server.url, identity));

      const used = await open(path);
      assert.equal(used.status, 404);
      assertPageHeaders(used.headers);
      assert.match(used.html, /This activation link is invalid, has expired or was already used/);
      assert.ok(!used.html.includes('<form'), 'no form for a link that cannot work');
    });

    test('a mailed link opened with JSON answers as the API did: GET of a reset link is JSON, activation 405 with Allow', async () => {
      const identity = 'json-links@example.com';
      await registerAndActivate(server, identity);
      await request(server.url, 'POST', '/account/reset-password', { json: { email: identity } });
      const reset = linkIn(lastMailTo(await mails(), identity).parsed, '/account/reset-password/');

      const checked = await request(server.url, 'GET', reset.path);
      assert.equal(checked.status, 200);
      assert.equal(checked.headers.get('content-type'), 'application/json');
      assert.equal(checked.body.valid, true);
      for (const accept of [
        undefined,
        '*/*',
        'application/json, text/html',
        'text/html;q=0.5, application/json',
      ]) {
        const answer = await fetch(`${server.url}${reset.path}`, {
          headers: accept ? { Accept: accept } : {},
        });
        assert.equal(answer.headers.get('content-type'), 'application/json', `Accept: ${accept}`);
      }

      const activation = await request(server.url, 'GET', '/account/activate/x'.padEnd(61, 'x'));
      assert.equal(activation.status, 405);
      assert.equal(activation.headers.get('allow'), 'PATCH');
      assert.equal(activation.headers.get('content-type'), 'application/problem+json');
      const registerGet = await request(server.url, 'GET', '/account/register');
      assert.equal(registerGet.status, 405);
      assert.equal(registerGet.headers.get('allow'), 'POST');

      const json = await request(server.url, 'POST', '/account/reset-password', {
        json: { email: identity },
      });
      assert.equal(json.status, 200);
      assert.equal(json.body.message, ANSWERS.requestPasswordReset);
    });

    test('forgot password: the page mails a link; its page refuses mismatched passwords, then sets the new one', async () => {
      const identity = 'reset-on-page@example.com';
      await registerAndActivate(server, identity);
      const requested = await fill('/account/reset-password', { email: identity });
      assert.equal(requested.status, 200);
      assert.match(requested.html, /a link to choose a new password has been sent/);
      const { path } = linkIn(lastMailTo(await mails(), identity).parsed, '/account/reset-password/');

      const shown = await open(path);
      assert.equal(shown.status, 200);
      assert.match(shown.html, /<h1>Choose a new password<\/h1>/);
      const mismatched = await post(path, {
        csrf_token: csrfTokenOf(shown.html),
        password: NEW_PASSWORD,
        passwordConfirm: 'not the same',
      });
      assert.equal(mismatched.status, 400);
      assert.equal(fieldError(mismatched.html, 'passwordConfirm'), 'Does not match the password');
      const done = await post(path, {
        csrf_token: csrfTokenOf(mismatched.html),
        password: NEW_PASSWORD,
        passwordConfirm: NEW_PASSWORD,
      });
      assert.equal(done.status, 200, done.html);
      assert.match(done.html, /Your password has been changed/);
      assert.ok(await canUserLogin(server.url, identity, NEW_PASSWORD));
      assert.equal(await canUserLogin(server.url, identity, PASSWORD), false);

      const expired = await open(path);
      assert.equal(expired.status, 404);
      assert.match(expired.html, /This password reset link is invalid, has expired or was already used/);
    });

    test('a change of address asked through the API is confirmed on its page, with the password', async () => {
      const identity = 'moving-on-page@example.com';
      const moved = 'moved-on-page@example.com';
      await registerAndActivate(server, identity);
      const { access_token } = await userLogin(server.url, identity);
      const asked = await request(server.url, 'POST', '/users/my-account/identity', {
        token: access_token,
        json: { identity: moved, currentPassword: PASSWORD },
      });
      assert.equal(asked.status, 202);
      const { path } = linkIn(lastMailTo(await mails(), moved).parsed, '/account/change-identity/');

      const wrong = await fill(path, { currentPassword: 'not it' });
      assert.equal(wrong.status, 400);
      assert.equal(fieldError(wrong.html, 'currentPassword'), 'Is not the current password');
      const done = await post(path, { csrf_token: csrfTokenOf(wrong.html), currentPassword: PASSWORD });
      assert.equal(done.status, 200, done.html);
      assert.match(done.html, new RegExp(`<strong>${moved}</strong>`));
      assert.ok(await canUserLogin(server.url, moved));
    });

    test("a form's value works once, on its own page and link, and only from the service's origin", async () => {
      const shown = await open('/account/reset-password');
      const value = csrfTokenOf(shown.html);
      const crossSite = await post(
        '/account/reset-password',
        { csrf_token: value, email: 'nobody@example.com' },
        { 'Sec-Fetch-Site': 'cross-site', Origin: 'https://elsewhere.example' },
      );
      assert.equal(crossSite.status, 403);
      assert.match(crossSite.html, /sent from another site/);
      const otherPage = await post('/account/register', {
        csrf_token: value,
        identity: 'x@example.com',
        password: PASSWORD,
        passwordConfirm: PASSWORD,
      });
      assert.equal(otherPage.status, 400);
      assert.match(otherPage.html, /This form has expired or was already sent/);
      const first = await post('/account/reset-password', { csrf_token: value, email: 'nobody@example.com' });
      assert.equal(first.status, 200);
      const again = await post('/account/reset-password', { csrf_token: value, email: 'nobody@example.com' });
      assert.equal(again.status, 400);
      assert.match(again.html, /This form has expired or was already sent/);
      const forged = await post('/account/reset-password', {
        csrf_token: 'forged',
        email: 'nobody@example.com',
      });
      assert.equal(forged.status, 400);
    });

    test('return: only a same-origin /security/authorize?… path becomes the way back; anything else is ignored', async () => {
      const good = '/security/authorize?response_type=code&client_id=app&state=a%20b';
      const shown = await open(`/account/reset-password?${new URLSearchParams({ return: good })}`);
      assert.equal(backLink(shown.html), good);
      const done = await post('/account/reset-password', {
        csrf_token: csrfTokenOf(shown.html),
        email: 'nobody@example.com',
      });
      assert.equal(backLink(done.html), good, 'the way back survives the post, from the sealed value');

      for (const bad of [
        'https://evil.example/security/authorize?x=1',
        '//evil.example/security/authorize?x=1',
        '/\\evil.example/security/authorize?x=1',
        '/security/authorize',
        '/security/authorizeX?x=1',
        '/security/authorize/../../users?x=1',
        '/security/authorize?x=1#fragment',
        '/security/authorize?x=<script>',
        'javascript:alert(1)//security/authorize?',
        `/security/authorize?${'x'.repeat(15_000)}`,
      ]) {
        const page = await open(`/account/register?${new URLSearchParams({ return: bad })}`);
        assert.equal(page.status, 200);
        assert.equal(backLink(page.html), null, bad);
        assert.doesNotMatch(page.html, /Already have an account/, bad);
      }
    });

    test("a user client's sign-in page links to both pages, carrying the sign-in; an admin client's to neither", async () => {
      const superuser = await superuserToken(server.url);
      await registerClient(server.url, superuser, { name: 'pages-app', type: 'public' });
      await registerClient(server.url, superuser, {
        name: 'pages-admin-app',
        type: 'public',
        accounts: 'admin',
      });
      const query = authorizationQuery('pages-app', pkce().challenge, { state: 'keep me' });
      const signIn = await page(await fetch(`${server.url}/security/authorize?${query}`));
      assert.equal(signIn.status, 200, signIn.html);
      const links = [...signIn.html.matchAll(/<a href="([^"]+)">([^<]+)<\/a>/g)].map(
        ([, href = '', text]) => ({
          url: new URL(href.replaceAll('&#38;', '&'), server.url),
          text,
        }),
      );
      assert.deepEqual(
        links.map(({ url, text }) => [url.pathname, text]),
        [
          ['/account/reset-password', 'Forgot your password?'],
          ['/account/register', 'Create an account'],
        ],
      );
      for (const { url } of links) {
        const back = url.searchParams.get('return') ?? '';
        assert.ok(back.startsWith('/security/authorize?'), back);
        const again = new URL(back, server.url).searchParams;
        for (const [name, value] of new URLSearchParams(query)) assert.equal(again.get(name), value, name);
        const shown = await open(`${url.pathname}${url.search}`);
        assert.ok(shown.html.replaceAll('&#38;', '&').includes(`<a href="${back}">`), 'the page links back');
      }

      const admin = await page(
        await fetch(
          `${server.url}/security/authorize?${authorizationQuery('pages-admin-app', pkce().challenge)}`,
        ),
      );
      assert.equal(admin.status, 200, admin.html);
      assert.doesNotMatch(admin.html, /Forgot your password|Create an account/);
    });

    test('pages take no cross-origin script: no CORS headers, even with CORS_ORIGINS=*', async () => {
      const shown = await page(
        await fetch(`${server.url}/account/register`, {
          headers: { Accept: BROWSER_ACCEPT, Origin: 'https://elsewhere.example' },
        }),
      );
      assert.equal(shown.status, 200);
      assert.equal(shown.headers.get('access-control-allow-origin'), null);
      const api = await request(server.url, 'POST', '/account/activate', {
        json: { email: 'nobody@example.com' },
        headers: { Origin: 'https://elsewhere.example' },
      });
      assert.equal(api.headers.get('access-control-allow-origin'), '*', 'the API keeps its CORS');
    });
  });
}

describe('ACCOUNT_PAGES_URL', () => {
  let server: TestServer;
  const pages = 'https://front.example.test/my-account';
  before(async () => {
    server = await startTestServer({ env: { ACCOUNT_PAGES_URL: `${pages}/` } });
  });
  after(() => server.close());

  test("mailed links point at the deployment's own front end, whose hash works with the JSON API", async () => {
    const identity = 'front-end@example.com';
    const registered = await request(server.url, 'POST', '/account/register', {
      json: { identity, password: PASSWORD, passwordConfirm: PASSWORD },
    });
    assert.equal(registered.status, 201);
    const text = lastMailTo(await readMailDir(server.logDir), identity).parsed.text ?? '';
    const match = new RegExp(`${pages}/activate/([A-Za-z0-9_-]{43})\\r?\\n`).exec(text);
    assert.ok(match?.[1], text);
    const activated = await request(server.url, 'PATCH', `/account/activate/${match[1]}`, {
      json: { password: PASSWORD },
    });
    assert.equal(activated.status, 200);
    assert.ok(await canUserLogin(server.url, identity));
    await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
      identity: 'reset-front@example.com',
    });
    await request(server.url, 'POST', '/account/reset-password', {
      json: { email: 'reset-front@example.com' },
    });
    const reset = lastMailTo(await readMailDir(server.logDir), 'reset-front@example.com').parsed.text ?? '';
    assert.match(reset, new RegExp(`${pages}/reset-password/[A-Za-z0-9_-]{43}`));
  });
});
