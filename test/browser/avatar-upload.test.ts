/**
 * An avatar uploaded from a real form in headless Chromium, as a single-page app on another
 * origin does it: the person picks a file in a file input, the app's script posts the form
 * (FormData, so multipart/form-data with the file in `avatar`) to the API with the user's
 * access token, then follows the account's `_links.avatar` and shows the image it fetched
 * (an <img> of a blob URL: an <img src> cannot send the token). A plain form post cannot
 * carry a bearer token, which is why the page needs its few lines of script.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BrowserContext, chromium } from 'playwright-core';
import sharp from 'sharp';
import { storeAccount, userLogin } from '../accounts/fixtures.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { request } from '../support/http.ts';
import { JPEG, png, WEBP_LOSSLESS, WEBP_LOSSY } from '../support/images.ts';
import { distinctColours } from '../support/png.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** What an <img> knows once it decoded its image (the DOM's types are not loaded here). */
interface DecodedImage {
  naturalWidth: number;
  naturalHeight: number;
}

const skip = chromiumMissing('the avatar browser test');

/** The app's page: a form with a file input, and the script a single-page app would run. */
function appPage(api: string): string {
  return `<!doctype html>
<html lang="en"><meta charset="utf-8"><title>Profile</title>
<style>
  body { font: 16px system-ui, sans-serif; margin: 2rem; color: #1d1d1f; }
  img { display: block; width: 160px; height: 160px; margin: 1rem 0; border-radius: 50%;
        border: 4px solid #2457c5; object-fit: cover; image-rendering: pixelated; }
</style>
<h1>Your profile picture</h1>
<form id="upload">
  <label for="avatar">Choose an image (JPEG, PNG or WebP)</label>
  <input id="avatar" name="avatar" type="file" accept="image/jpeg,image/png,image/webp" required>
  <button>Upload</button>
</form>
<p id="status" role="status"></p>
<img id="picture" alt="Your avatar" hidden>
<script>
  const api = ${JSON.stringify(api)};
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  const auth = { Authorization: 'Bearer ' + token };
  const status = document.getElementById('status');
  document.getElementById('upload').addEventListener('submit', async (event) => {
    event.preventDefault();
    const put = await fetch(api + '/users/my-account/avatar', {
      method: 'PUT', headers: auth, body: new FormData(event.target),
    });
    if (put.status !== 204) { status.textContent = 'Refused: ' + (await put.json()).detail; return; }
    const account = await (await fetch(api + '/users/my-account', { headers: auth })).json();
    const image = await fetch(api + account._links.avatar.href, { headers: auth });
    const picture = document.getElementById('picture');
    picture.src = URL.createObjectURL(await image.blob());
    picture.hidden = false;
    await picture.decode();
    status.textContent = 'Saved (' + image.headers.get('Content-Type') + ')';
  });
</script>
</html>`;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('uploading an avatar from a browser form', { skip }, () => {
  let service: TestServer;
  let app: Server;
  let appUrl: string;
  let profile: string;
  let browser: BrowserContext;
  let token: string;
  const consoleErrors: string[] = [];

  before(async () => {
    let api = '';
    app = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(appPage(api));
    });
    appUrl = await listen(app);
    // The app's origin may call the API from its script (CORS).
    service = await startTestServer({ env: { CORS_ORIGINS: appUrl } });
    api = service.url;
    const identity = 'avatar-browser@example.com';
    await storeAccount(service.app.stores.users, (p) => service.app.passwords.hash(p), { identity });
    token = (await userLogin(service.url, identity)).access_token;
    profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 640, height: 420 },
    });
  });
  after(async () => {
    await browser?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
    await new Promise((resolve) => app?.close(resolve));
    await service?.close();
  });

  async function upload(file: { name: string; mimeType: string; buffer: Buffer }) {
    const page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    await page.goto(`${appUrl}/profile#token=${token}`);
    await page.getByLabel('Choose an image').setInputFiles(file);
    await page.getByRole('button', { name: 'Upload' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Saved|Refused/ })
      .waitFor();
    return page;
  }

  test('a PNG picked in the file input is stored and shown, read back through _links.avatar', async (t) => {
    const image = png(48, 48, [0xe8, 0x6a, 0x17]);
    const page = await upload({ name: 'me.png', mimeType: 'image/png', buffer: image });
    assert.equal(await page.getByRole('status').textContent(), 'Saved (image/png)');
    const shown = await page.getByRole('img', { name: 'Your avatar' }).evaluate((element) => {
      const img = element as unknown as DecodedImage;
      return { width: img.naturalWidth, height: img.naturalHeight };
    });
    assert.deepEqual(shown, { width: 48, height: 48 }, 'Chromium decoded the image the API served');
    const stored = await fetch(`${service.url}/users/my-account/avatar`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    const [served, sent] = await Promise.all(
      [Buffer.from(await stored.arrayBuffer()), image].map((bytes) => sharp(bytes).raw().toBuffer()),
    );
    assert.deepEqual(served, sent, 'the pixels the form sent, encoded again');

    const shots = join(tmpdir(), 'token-service-screenshots');
    await mkdir(shots, { recursive: true });
    const screenshot = join(shots, `avatar-upload-${Date.now()}.png`);
    const colours = distinctColours(await page.screenshot({ path: screenshot, fullPage: true }));
    t.diagnostic(`screenshot of the uploaded avatar: ${screenshot} (${colours} colours)`);
    console.log(`# screenshot of the uploaded avatar: ${screenshot}`);
    // Text, the blue ring and the orange picture: far more than a blank page's one colour.
    assert.ok(colours > 20, `the screenshot is not blank (${colours} colours)`);
    await page.close();
    assert.deepEqual(consoleErrors, [], 'the browser reported no error (no CORS refusal)');
  });

  test('JPEG and WebP too: recognised by their bytes whatever the picked file is called', async () => {
    for (const [buffer, type] of [
      [JPEG, 'image/jpeg'],
      [WEBP_LOSSY, 'image/webp'],
      [WEBP_LOSSLESS, 'image/webp'],
    ] as const) {
      const page = await upload({ name: 'picture.png', mimeType: 'image/png', buffer });
      assert.equal(await page.getByRole('status').textContent(), `Saved (${type})`);
      const width = await page
        .getByRole('img')
        .evaluate((element) => (element as unknown as DecodedImage).naturalWidth);
      assert.equal(width, 2, `${type}: Chromium decoded it`);
      await page.close();
    }
  });

  test('a phone photo, taken with the phone held upright, is shown upright and scaled down', async () => {
    // As the sensor saw it, 1024 × 512, orange on the left; Exif orientation 6 turns it upright.
    const photo = await sharp({ create: { width: 1024, height: 512, channels: 3, background: '#2457c5' } })
      .composite([{ input: { create: { width: 512, height: 512, channels: 3, background: '#e86a17' } } }])
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const page = await upload({ name: 'IMG_0001.jpg', mimeType: 'image/jpeg', buffer: photo });
    assert.equal(await page.getByRole('status').textContent(), 'Saved (image/jpeg)');
    const shown = await page.getByRole('img', { name: 'Your avatar' }).evaluate((element) => {
      const img = element as unknown as DecodedImage;
      return { width: img.naturalWidth, height: img.naturalHeight };
    });
    assert.deepEqual(shown, { width: 256, height: 512 }, 'upright, within AVATAR_MAX_SIDE');
    await page.close();
  });

  test('a file that is no image is refused, and the page says why', async () => {
    const page = await upload({ name: 'me.png', mimeType: 'image/png', buffer: Buffer.from('<svg></svg>') });
    assert.match(String(await page.getByRole('status').textContent()), /^Refused: .*JPEG, PNG or WebP/);
    await page.close();
    const own = await request(service.url, 'GET', '/users/my-account', { token });
    assert.ok((own.body._links as Record<string, unknown>).avatar, 'the earlier avatar stays');
  });
});
