/**
 * A mobile app's sign-in in a real browser: the app opens the authorization URL with its
 * private-use redirect URI (`com.example.app:/oauth2redirect`, RFC 8252 §7.1), and after the
 * post the browser must be let go to it. `form-action` governs the redirect that follows a
 * form's post, and Chromium blocks one to `com.example.app:` under `'self'` alone and under
 * `'self' null` (the URL parser's origin of such a URI): the post's request then fails and
 * the console reports the violation. No app handles the scheme here, so the browser's request
 * for the redirect URI is where the app would take over: it carries the code.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BrowserContext, chromium } from 'playwright-core';
import {
  authorizationQuery,
  exchangeCode,
  pkce,
  registerClient,
  superuserToken,
} from '../support/authorization.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const REDIRECT_URI = 'com.example.app:/oauth2redirect';

describe("a mobile app's sign-in in Chromium", {
  skip: chromiumMissing('the mobile app browser test'),
}, () => {
  let service: TestServer;
  let profile: string;
  let browser: BrowserContext;
  let clientName: string;

  before(async () => {
    service = await startTestServer({ ownAppUrl: true });
    const superuser = await superuserToken(service.url);
    clientName = (
      await registerClient(service.url, superuser, {
        name: 'mobile',
        type: 'public',
        redirectUris: [REDIRECT_URI],
      })
    ).name;
    profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
  });
  after(async () => {
    await browser?.close();
    await rm(profile, { recursive: true, force: true });
    await service?.close();
  });

  test('the redirect to the private-use scheme is not blocked by the page CSP, and carries a code that works', async () => {
    const { verifier, challenge } = pkce();
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    const query = authorizationQuery(clientName, challenge, {
      redirect_uri: REDIRECT_URI,
      state: 'mobile-state',
    });
    assert.equal((await page.goto(`${service.url}/security/authorize?${query}`))?.status(), 200);
    await page.getByLabel('Email address').fill(SEEDED_USER.username);
    await page.getByLabel('Password').fill(SEEDED_USER.password);
    const [toApp] = await Promise.all([
      page.waitForRequest((sent) => sent.url().startsWith(`${REDIRECT_URI}?`), { timeout: 10_000 }),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    assert.deepEqual(consoleErrors, [], 'no CSP violation');
    const parameters = new URL(toApp.url()).searchParams;
    assert.equal(parameters.get('state'), 'mobile-state');
    const tokens = await exchangeCode(service.url, {
      client_id: clientName,
      code: parameters.get('code') ?? '',
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
    });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    const own = await request(service.url, 'GET', '/users/my-account', {
      token: String(tokens.body.access_token),
    });
    assert.equal(own.body.identity, SEEDED_USER.username);
    await page.close();
  });
});
