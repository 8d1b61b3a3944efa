/**
 * The account pages as a person uses them, in headless Chromium (Debian's `chromium`) driven by
 * playwright-core: register from an app's sign-in page, activate from the mailed link, sign in;
 * forget the password, follow the mail, set a new one and come back to the app's sign-in;
 * confirm a change of address asked through the API. Each page's errors are shown too. A
 * screenshot of every page is kept in `$TMPDIR/token-service-screenshots/` (paths printed).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { PASSWORD, userLogin } from '../accounts/fixtures.ts';
import { authorizationQuery, pkce, registerClient, superuserToken } from '../support/authorization.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { request } from '../support/http.ts';
import { distinctColours } from '../support/png.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

const NEW_PASSWORD = 'a fresh and long passphrase';

const skip = chromiumMissing('the account journeys');

/** The app's side: its redirect URI, answering a small page. */
async function startApp(): Promise<{ server: Server; callback: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>The app</title><p>Back in the app</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, callback: `http://127.0.0.1:${port}/callback` };
}

describe('account journeys in a real browser', { skip }, () => {
  let service: TestServer;
  let app: Awaited<ReturnType<typeof startApp>>;
  let profile: string;
  let browser: BrowserContext;
  const clientName = 'journeys-app';
  const shots = join(tmpdir(), 'token-service-screenshots');
  /** Problems the browser reported: a CSP violation, a stylesheet not loaded. */
  const consoleErrors: string[] = [];

  before(async () => {
    service = await startTestServer({ ownAppUrl: true });
    app = await startApp();
    const superuser = await superuserToken(service.url);
    await registerClient(service.url, superuser, {
      name: clientName,
      type: 'public',
      redirectUris: [app.callback],
    });
    await mkdir(shots, { recursive: true });
    profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 800, height: 720 },
    });
  });
  after(async () => {
    await browser?.close();
    await rm(profile, { recursive: true, force: true });
    await new Promise((resolve) => app?.server.close(resolve));
    await service?.close();
  });

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    page.on('console', (message) => {
      // A page answered with an error status is logged as a resource that failed; that is no fault.
      if (
        message.type() === 'error' &&
        !message.text().startsWith('Failed to load resource: the server responded')
      )
        consoleErrors.push(`${page.url()}: ${message.text()}`);
    });
    return page;
  }

  /** Keeps a screenshot of the page, prints where, and checks it is not blank. */
  async function screenshot(page: Page, name: string): Promise<void> {
    const path = join(shots, `account-${name}-${Date.now()}.png`);
    const png = await page.screenshot({ path, fullPage: true });
    console.log(`# screenshot of ${name}: ${path}`);
    // Text, a border, a blue button: anti-aliased text alone gives dozens of shades.
    assert.ok(distinctColours(png) > 20, `the screenshot of ${name} is not blank`);
  }

  /** The app's sign-in page, as the app sends the browser to it. */
  async function openSignIn(page: Page, state: string): Promise<void> {
    const query = authorizationQuery(clientName, pkce().challenge, { redirect_uri: app.callback, state });
    const response = await page.goto(`${service.url}/security/authorize?${query}`);
    assert.equal(response?.status(), 200);
  }

  async function submit(page: Page, button: string): Promise<void> {
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: button }).click()]);
    await page.waitForLoadState('load');
  }

  /** Signs in on the sign-in page the browser shows, and lands in the app with a code and the state. */
  async function signIn(page: Page, username: string, password: string, state: string): Promise<void> {
    await page.getByLabel('Email address').fill(username);
    await page.getByLabel('Password').fill(password);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(app.callback)),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('state'), state);
    assert.ok(landed.searchParams.get('code'));
  }

  const mailLink = async (to: string, path: Parameters<typeof linkIn>[1]) =>
    linkIn(lastMailTo(await readMailDir(service.logDir), to).parsed, path).url;

  const identity = 'journey@example.com';

  test('register from the sign-in page, open the activation link from the mail, activate, sign in', async () => {
    const page = await newPage();
    await openSignIn(page, 'registering');
    await screenshot(page, 'sign-in-with-links');
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('link', { name: 'Create an account' }).click(),
    ]);
    assert.equal(await page.title(), 'Create an account');
    await screenshot(page, 'register');

    await page.getByLabel('Email address').fill(identity);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill('not the same password');
    await page.getByLabel('First name (optional)').fill('Journey');
    await submit(page, 'Create the account');
    assert.equal(await page.locator('#passwordConfirm-error').textContent(), 'Does not match the password');
    assert.equal(await page.getByLabel('Email address').inputValue(), identity, 'what was typed is kept');
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '', 'a password is not');
    assert.equal(await page.locator(':focus').getAttribute('id'), 'passwordConfirm');
    await screenshot(page, 'register-mismatched-passwords');

    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await submit(page, 'Create the account');
    assert.match((await page.getByRole('status').textContent()) ?? '', /We sent an activation link/);
    await screenshot(page, 'register-done');
    const back = page.getByRole('link', { name: 'Back to sign-in' });
    assert.match((await back.getAttribute('href')) ?? '', /^\/security\/authorize\?/);

    const mailed = await newPage();
    const activationLink = await mailLink(identity, '/account/activate/');
    await mailed.goto(activationLink);
    assert.equal(await mailed.title(), 'Activate your account');
    await screenshot(mailed, 'activate');
    await mailed.getByLabel('Password').fill('a wrong password');
    await submit(mailed, 'Activate');
    assert.equal(
      await mailed.locator('#password-error').textContent(),
      'Does not match the password chosen at registration',
    );
    await screenshot(mailed, 'activate-wrong-password');
    await mailed.getByLabel('Password').fill(PASSWORD);
    await submit(mailed, 'Activate');
    assert.match((await mailed.getByRole('status').textContent()) ?? '', /Your account is active/);
    await screenshot(mailed, 'activate-done');
    await mailed.goto(activationLink);
    assert.match(
      (await mailed.getByRole('alert').textContent()) ?? '',
      /invalid, has expired or was already used/,
    );
    await screenshot(mailed, 'activate-used-link');
    await mailed.close();

    // Back on the first tab: the way back leads to the app's sign-in, which now lets the account in.
    await Promise.all([page.waitForLoadState('load'), back.click()]);
    assert.equal(await page.title(), `Sign in to ${clientName}`);
    await signIn(page, identity, PASSWORD, 'registering');
    await page.close();
  });

  test('forget the password from the sign-in page, follow the mail, set a new one, come back and sign in', async () => {
    const page = await newPage();
    await openSignIn(page, 'forgot');
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('link', { name: 'Forgot your password?' }).click(),
    ]);
    assert.equal(await page.title(), 'Forgot your password?');
    await screenshot(page, 'request-reset');
    await page.getByLabel('Email address').fill(identity);
    await submit(page, 'Send the link');
    assert.match((await page.getByRole('status').textContent()) ?? '', /a link to choose a new password/);
    await screenshot(page, 'request-reset-done');

    const mailed = await newPage();
    await mailed.goto(await mailLink(identity, '/account/reset-password/'));
    assert.equal(await mailed.title(), 'Choose a new password');
    await screenshot(mailed, 'reset');
    await mailed.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await mailed.getByLabel('Repeat the new password').fill('something else');
    await submit(mailed, 'Set the password');
    assert.equal(await mailed.locator('#passwordConfirm-error').textContent(), 'Does not match the password');
    await screenshot(mailed, 'reset-mismatched-passwords');
    await mailed.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await mailed.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await submit(mailed, 'Set the password');
    assert.match((await mailed.getByRole('status').textContent()) ?? '', /Your password has been changed/);
    await screenshot(mailed, 'reset-done');
    await mailed.close();

    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('link', { name: 'Back to sign-in' }).click(),
    ]);
    assert.equal(await page.title(), `Sign in to ${clientName}`);
    await page.getByLabel('Email address').fill(identity);
    await page.getByLabel('Password').fill(PASSWORD);
    await submit(page, 'Sign in');
    assert.equal(
      await page.getByRole('alert').textContent(),
      'Invalid credentials',
      'the old password is gone',
    );
    await screenshot(page, 'sign-in-wrong-password');
    await signIn(page, identity, NEW_PASSWORD, 'forgot');
    await page.close();
  });

  test('a change of address asked through the API, confirmed on the page from the mail', async () => {
    const moved = 'journey-moved@example.com';
    const { access_token } = await userLogin(service.url, identity, NEW_PASSWORD);
    const asked = await request(service.url, 'POST', '/users/my-account/identity', {
      token: access_token,
      json: { identity: moved, currentPassword: NEW_PASSWORD },
    });
    assert.equal(asked.status, 202, JSON.stringify(asked.body));

    const page = await newPage();
    await page.goto(await mailLink(moved, '/account/change-identity/'));
    assert.equal(await page.title(), 'Confirm your new address');
    await screenshot(page, 'change-identity');
    await page.getByLabel('Password').fill('not the password');
    await submit(page, 'Confirm the address');
    assert.equal(await page.locator('#currentPassword-error').textContent(), 'Is not the current password');
    await screenshot(page, 'change-identity-wrong-password');
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await submit(page, 'Confirm the address');
    assert.match((await page.getByRole('status').textContent()) ?? '', /signs in with its new address/);
    assert.equal(await page.locator('strong').textContent(), moved);
    await screenshot(page, 'change-identity-done');

    await page.goto(`${service.url}/account/reset-password/${'A'.repeat(43)}`);
    assert.match(
      (await page.getByRole('alert').textContent()) ?? '',
      /invalid, has expired or was already used/,
    );
    await screenshot(page, 'unknown-link');
    await page.close();
    assert.deepEqual(consoleErrors, [], 'the browser reported no error (no CSP violation)');
  });
});
