/**
 * The sign-in in a real browser: headless Chromium (Debian's `chromium`, which .ci/run
 * installs) driven by playwright-core. It opens the authorization URL an app would send it
 * to, fills the form, and lands on the app's redirect URI, here a server of the test, whose
 * code the test then redeems as the app would. Chromium applies the page's Content Security
 * Policy as it would for anyone: `form-action` governs the redirect after the post too.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { PASSWORD, storeAccount } from '../accounts/fixtures.ts';
import { authorizationQuery, pkce, registerClient, superuserToken } from '../support/authorization.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { request } from '../support/http.ts';
import { distinctColours } from '../support/png.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** The id of the element that has the keyboard focus. */
function focused(page: Page): Promise<string | null> {
  return page.locator(':focus').getAttribute('id');
}

const skip = chromiumMissing('the sign-in browser suite');

/** The app's side: its redirect URI, answering a small page and remembering what arrived. */
async function startApp(): Promise<{ server: Server; callback: string; arrived: URL[] }> {
  const arrived: URL[] = [];
  const server = createServer((req, res) => {
    arrived.push(new URL(req.url ?? '/', 'http://127.0.0.1'));
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>The app</title><p>Back in the app</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, callback: `http://127.0.0.1:${port}/callback`, arrived };
}

/** A page of another site (another port: another origin, the same site), serving `html`. */
async function startPage(html: string): Promise<{ server: Server; url: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Another site</title>${html}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}

describe('signing in with a real browser', { skip }, () => {
  let service: TestServer;
  let app: Awaited<ReturnType<typeof startApp>>;
  let profile: string;
  let browser: BrowserContext;
  let clientName: string;
  const user = { username: 'browser-user@example.com', password: PASSWORD };
  /** Problems the browser reported: a CSP violation, a stylesheet not loaded. */
  const consoleErrors: string[] = [];

  before(async () => {
    service = await startTestServer({ ownAppUrl: true });
    app = await startApp();
    const superuser = await superuserToken(service.url);
    clientName = (
      await registerClient(service.url, superuser, {
        name: 'browser-app',
        type: 'public',
        redirectUris: [app.callback],
      })
    ).name;
    await storeAccount(service.app.stores.users, (p) => service.app.passwords.hash(p), {
      identity: user.username,
    });
    profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 800, height: 600 },
    });
  });
  after(async () => {
    await browser?.close();
    await rm(profile, { recursive: true, force: true });
    await new Promise((resolve) => app?.server.close(resolve));
    await service?.close();
  });

  async function openSignIn(state: string): Promise<{ page: Page; verifier: string }> {
    const { verifier, challenge } = pkce();
    const page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    const query = authorizationQuery(clientName, challenge, { redirect_uri: app.callback, state });
    const response = await page.goto(`${service.url}/security/authorize?${query}`);
    assert.equal(response?.status(), 200);
    return { page, verifier };
  }

  test('open the authorization URL, sign in, land on the redirect URI with code and state, redeem the code', async (t) => {
    const { page, verifier } = await openSignIn('browser-state');
    assert.equal(await page.title(), `Sign in to ${clientName}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), `Sign in to ${clientName}`);
    assert.equal(await page.locator('html').getAttribute('lang'), 'en');

    // The keyboard order is the reading order: the name (focused on arrival), the password, the button.
    assert.equal(await focused(page), 'username');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'password');
    await page.keyboard.press('Tab');
    assert.equal(await page.locator(':focus').textContent(), 'Sign in');
    // The service's stylesheet applies (the CSP lets it in).
    const background = await page.evaluate<string>(
      "getComputedStyle(document.querySelector('button')).backgroundColor",
    );
    assert.equal(background, 'rgb(36, 87, 197)');

    const shots = join(tmpdir(), 'token-service-screenshots');
    await mkdir(shots, { recursive: true });
    const screenshot = join(shots, `sign-in-${Date.now()}.png`);
    const png = await page.screenshot({ path: screenshot, fullPage: true });
    const colours = distinctColours(png);
    t.diagnostic(`screenshot of the sign-in page: ${screenshot} (${colours} colours)`);
    console.log(`# screenshot of the sign-in page: ${screenshot}`);
    // Text, a border, a blue button: anti-aliased text alone gives dozens of shades.
    assert.ok(colours > 20, `the screenshot is not blank (${colours} colours)`);

    await page.getByLabel('Email address').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(app.callback)),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    assert.equal(await page.textContent('p'), 'Back in the app');
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('state'), 'browser-state');
    const code = landed.searchParams.get('code');
    assert.ok(code);

    const tokens = await request(service.url, 'POST', '/security/generate-token', {
      form: {
        grant_type: 'authorization_code',
        client_id: clientName,
        code,
        redirect_uri: app.callback,
        code_verifier: verifier,
      },
    });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    const own = await request(service.url, 'GET', '/users/my-account', {
      token: String(tokens.body.access_token),
    });
    assert.equal(own.body.identity, user.username);
    await page.close();
    assert.deepEqual(consoleErrors, [], 'the browser reported no error (no CSP violation)');
  });

  test('a wrong password shows the form again with the error, the name kept and the password focused', async () => {
    const { page } = await openSignIn('second-try');
    await page.getByLabel('Email address').fill(user.username);
    await page.getByLabel('Password').fill('not the password');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Sign in' }).click()]);
    assert.equal(await page.getByRole('alert').textContent(), 'Invalid credentials');
    assert.equal(await page.getByLabel('Email address').inputValue(), user.username);
    assert.equal(await focused(page), 'password');
    assert.ok(page.url().startsWith(`${service.url}/security/authorize`));

    await page.getByLabel('Password').fill(user.password);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(app.callback)),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    assert.equal(new URL(page.url()).searchParams.get('state'), 'second-try');
    await page.close();
  });

  test('the sign-in works without JavaScript', async () => {
    const noScriptProfile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
    const noScript = await chromium.launchPersistentContext(noScriptProfile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      javaScriptEnabled: false,
    });
    try {
      const page = await noScript.newPage();
      const query = authorizationQuery(clientName, pkce().challenge, {
        redirect_uri: app.callback,
        state: 'no-js',
      });
      await page.goto(`${service.url}/security/authorize?${query}`);
      await page.getByLabel('Email address').fill(user.username);
      await page.getByLabel('Password').fill(user.password);
      await Promise.all([
        page.waitForURL((url) => url.href.startsWith(app.callback)),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      assert.equal(new URL(page.url()).searchParams.get('state'), 'no-js');
      assert.ok(new URL(page.url()).searchParams.get('code'));
    } finally {
      await noScript.close();
      await rm(noScriptProfile, { recursive: true, force: true });
    }
  });

  test('a form another site posts with a value it fetched signs nobody in (login CSRF)', async () => {
    // The attacker fetches a form of its own, then has the victim's browser post it from its page.
    const query = authorizationQuery(clientName, pkce().challenge, { redirect_uri: app.callback });
    const html = await (await fetch(`${service.url}/security/authorize?${query}`)).text();
    const value = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const attacker = await startPage(
      `<form method="post" action="${service.url}/security/authorize">` +
        `<input name="csrf_token" value="${value}"><input name="username" value="${user.username}">` +
        `<input name="password" value="${user.password}"><button>go</button></form>`,
    );
    try {
      const page = await browser.newPage();
      await page.goto(attacker.url);
      const [response] = await Promise.all([
        page.waitForResponse(`${service.url}/security/authorize`),
        page.getByRole('button', { name: 'go' }).click(),
      ]);
      assert.equal(response.status(), 403);
      assert.match(await response.text(), /sent from another site/);
      assert.ok(!page.url().startsWith(app.callback), 'never sent to the app with a code');
      await page.close();
    } finally {
      await new Promise((resolve) => attacker.server.close(resolve));
    }
  });

  test('the page refuses to be framed', async () => {
    const framing = join(profile, 'framing.html');
    const query = authorizationQuery(clientName, pkce().challenge, { redirect_uri: app.callback });
    await writeFile(framing, `<iframe src="${service.url}/security/authorize?${query}"></iframe>`);
    const page = await browser.newPage();
    await page.goto(`file://${framing}`);
    await page.waitForTimeout(500);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
    // Blocked by frame-ancestors / X-Frame-Options: the frame holds no sign-in form.
    assert.equal(
      (await frame
        ?.locator('form')
        .count()
        .catch(() => 0)) ?? 0,
      0,
    );
    await page.close();
  });
});
