/**
 * The project's nginx configuration (nginx/templates/default.conf.template), rendered the way
 * the official image does and run by a real nginx on free loopback ports in front of the
 * service: HTTPS with a certificate from ops/make-cert.sh, HTTP redirected, the client
 * address handed to the app by nginx, never by the client, and bodies limited to BODY_LIMIT;
 * no API route limited, and every answer nginx writes itself JSON in the API's format.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load.ts';
import { MULTIPART_ALLOWANCE } from '../../src/http/upload.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { storeAccount, userLogin } from '../accounts/fixtures.ts';
import {
  authorizationQuery,
  csrfTokenOf,
  pkce,
  registerLargestRequest,
  superuserToken,
} from '../support/authorization.ts';
import { freePort } from '../support/backends.ts';
import { ADMIN_CLIENT, decodeJwtPart, FRONTEND_CLIENT, SEEDED_USER } from '../support/http.ts';
import { png } from '../support/images.ts';
import {
  ensureNginx,
  type NginxProcess,
  REPO_ROOT,
  renderTemplate,
  send,
  startNginx,
} from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const nginx = ensureNginx();
const skip = 'reason' in nginx ? nginx.reason : false;
if (skip) console.log(`# nginx tests skipped: ${skip}`);

const REPORT_TOKEN = 'nginx-test-token-0123456789abcdef';
const TEMPLATE = join(REPO_ROOT, 'nginx/templates/default.conf.template');
const BODY_LIMIT_SCRIPT = join(REPO_ROOT, 'nginx/entrypoint/10-body-limit.envsh');

/**
 * What the nginx image's entrypoint exports after sourcing the project's script with these
 * settings: NGINX_CLIENT_MAX_BODY_SIZE (or NGINX_AVATAR_MAX_BODY_SIZE), or the script's
 * complaint when it stops the start.
 */
function exported(
  settings: { BODY_LIMIT?: string; AVATAR_SIZE_LIMIT?: string },
  name = 'NGINX_CLIENT_MAX_BODY_SIZE',
): { size: string } | { refused: string } {
  const result = spawnSync('sh', ['-c', `. "${BODY_LIMIT_SCRIPT}" && printf %s "$${name}"`], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...settings },
  });
  return result.status === 0 ? { size: result.stdout } : { refused: result.stderr.trim() };
}

function clientMaxBodySize(bodyLimit: string | undefined): { size: string } | { refused: string } {
  return exported(bodyLimit === undefined ? {} : { BODY_LIMIT: bodyLimit });
}

function avatarMaxBodySize(avatarLimit: string | undefined): { size: string } | { refused: string } {
  return exported(
    avatarLimit === undefined ? {} : { AVATAR_SIZE_LIMIT: avatarLimit },
    'NGINX_AVATAR_MAX_BODY_SIZE',
  );
}

/** nginx's reading of a size (ngx_parse_offset): bytes, or k, m, g. */
function nginxBytes(size: string): number {
  const match = /^(\d+)([kmg]?)$/.exec(size);
  assert.ok(match, `nginx size ${size}`);
  return Number(match[1]) * 1024 ** ['', 'k', 'm', 'g'].indexOf(match[2] ?? '');
}

type Answer = Awaited<ReturnType<typeof send>>;

/** An answer nginx wrote itself as the API writes its problems: RFC 9457 problem+json. */
function assertProblem(response: Answer, status: number): Record<string, unknown> {
  assert.equal(response.status, status, response.text);
  assert.equal(response.headers['content-type'], 'application/problem+json');
  const body = response.json() as Record<string, unknown>;
  assert.equal(body.type, 'about:blank');
  assert.equal(body.status, status);
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  assert.equal(response.headers['strict-transport-security'], 'max-age=63072000');
  return body;
}

/** The same at a token endpoint: RFC 6749 section 5.2 JSON with `error`, never cached. */
function assertOAuthError(response: Answer, status: number, error: string): void {
  assert.equal(response.status, status, response.text);
  assert.equal(response.headers['content-type'], 'application/json');
  const body = response.json() as Record<string, unknown>;
  assert.equal(body.error, error);
  assert.equal(body.error_description, body.detail);
  assert.equal(body.status, status);
  assert.equal(response.headers['cache-control'], 'no-store');
  assert.equal(response.headers.pragma, 'no-cache');
}

describe('client_max_body_size follows BODY_LIMIT', () => {
  test('the entrypoint script gives nginx the very limit the app enforces, and refuses what the app refuses', () => {
    const values = [
      '1',
      '512',
      '512b',
      '100kb',
      '100KB',
      '1mb',
      ' 1 mb ',
      '2Mb',
      '1gb',
      '0',
      '0kb',
      '1.5mb',
      '1tb',
      'huge',
      '-1',
    ];
    for (const value of values) {
      let appBytes: number | undefined;
      try {
        appBytes = loadConfig({ BODY_LIMIT: value }, readPackageInfo()).bodyLimit;
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
      }
      const nginx = clientMaxBodySize(value);
      if (appBytes === undefined) {
        assert.ok('refused' in nginx, `${value}: the app refuses it, so must nginx`);
        assert.match(nginx.refused, /BODY_LIMIT must be a size/);
      } else {
        assert.ok('size' in nginx, `${value}: ${'refused' in nginx ? nginx.refused : ''}`);
        assert.equal(nginxBytes(nginx.size), appBytes, value);
      }
    }
  });

  test('unset, it is the app default of 1 MB', () => {
    assert.deepEqual(clientMaxBodySize(undefined), { size: '1m' });
    assert.equal(loadConfig({}, readPackageInfo()).bodyLimit, nginxBytes('1m'));
  });

  test('avatar uploads get AVATAR_SIZE_LIMIT plus the room of a form, as the app does, and what the app refuses stops nginx', () => {
    const values = [undefined, '1', '100kb', '0010kb', '1mb', ' 2 MB ', '15mb', '16mb', '15728641', '1gb'];
    for (const value of [...values, '0', '1.5mb', 'huge', '99999999999999999999']) {
      let appBytes: number | undefined;
      try {
        appBytes = loadConfig(
          value === undefined ? {} : { AVATAR_SIZE_LIMIT: value },
          readPackageInfo(),
        ).avatarSizeLimit;
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
      }
      const nginx = avatarMaxBodySize(value);
      if (appBytes === undefined) {
        assert.ok('refused' in nginx, `${value}: the app refuses it, so must nginx`);
        assert.match(nginx.refused, /AVATAR_SIZE_LIMIT must be/);
      } else {
        assert.ok('size' in nginx, `${value}: ${'refused' in nginx ? nginx.refused : ''}`);
        assert.equal(nginxBytes(nginx.size), appBytes + MULTIPART_ALLOWANCE, String(value));
      }
    }
  });
});

let root: string;
let ca: string;

interface Front {
  https: string;
  http: string;
  process: NginxProcess;
}

/** Renders the project's template for an upstream and runs nginx on two free ports with it. */
async function startFront(name: string, upstream: string, bodyLimit = '1mb'): Promise<Front> {
  if ('reason' in nginx) throw new Error(nginx.reason);
  const prefix = join(root, name);
  await mkdir(prefix, { recursive: true });
  // nginx's workers run as another user when the tests run as root: they must reach the
  // temporary files under the prefix (a body larger than client_body_buffer_size).
  await chmod(root, 0o755);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const bodySize = clientMaxBodySize(bodyLimit);
  if (!('size' in bodySize)) throw new Error(bodySize.refused);
  const avatarSize = avatarMaxBodySize(undefined);
  if (!('size' in avatarSize)) throw new Error(avatarSize.refused);
  const site = renderTemplate(await readFile(TEMPLATE, 'utf8'), {
    NGINX_CLIENT_MAX_BODY_SIZE: bodySize.size,
    NGINX_AVATAR_MAX_BODY_SIZE: avatarSize.size,
    NGINX_SERVER_NAME: 'localhost',
    NGINX_HTTP_PORT: `127.0.0.1:${httpPort}`,
    NGINX_HTTPS_PORT: `127.0.0.1:${httpsPort}`,
    NGINX_UPSTREAM: upstream,
    // Never asked: the upstream here is an IP address.
    NGINX_RESOLVER: '127.0.0.1',
    NGINX_TLS_CERTIFICATE: join(root, 'certs/tls.crt'),
    NGINX_TLS_CERTIFICATE_KEY: join(root, 'certs/tls.key'),
  });
  await writeFile(join(prefix, 'site.conf'), site);
  // What the official image's nginx.conf provides around conf.d/, with paths in the temp dir.
  await writeFile(
    join(prefix, 'nginx.conf'),
    [
      'worker_processes 1;',
      `pid ${prefix}/nginx.pid;`,
      `error_log ${prefix}/error.log warn;`,
      'events { worker_connections 256; }',
      'http {',
      `  client_body_temp_path ${prefix}/client_body;`,
      `  proxy_temp_path ${prefix}/proxy;`,
      `  include ${prefix}/site.conf;`,
      '}',
      '',
    ].join('\n'),
  );
  const https = `https://127.0.0.1:${httpsPort}`;
  const process = await startNginx({
    binary: nginx.binary,
    prefix,
    config: join(prefix, 'nginx.conf'),
    readyUrl: `${https}/`,
    ca,
  });
  return { https, http: `http://127.0.0.1:${httpPort}`, process };
}

describe('nginx in front of the service', { skip }, () => {
  let app: TestServer;
  let front: Front;
  /** An upstream that records the headers nginx sends and the connections it opens. */
  let echo: Server;
  let echoFront: Front;
  /** The echo upstream behind nginx with BODY_LIMIT=2kb. */
  let smallBodies: Front;
  const seen: IncomingHttpHeaders[] = [];
  let echoConnections = 0;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'nginx-'));
    execFileSync('sh', [join(REPO_ROOT, 'ops/make-cert.sh'), join(root, 'certs'), 'localhost'], {
      stdio: 'ignore',
    });
    ca = await readFile(join(root, 'certs/tls.crt'), 'utf8');
    app = await startTestServer({
      env: { ERROR_REPORT_TOKENS: `nginx:${REPORT_TOKEN}`, ERROR_REPORT_IP_WHITELIST: '127.0.0.1' },
    });
    front = await startFront('app', new URL(app.url).host);

    echo = createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('Content-Type', 'application/json');
      res.end('{}');
    });
    echo.on('connection', () => echoConnections++);
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const echoUpstream = `127.0.0.1:${(echo.address() as AddressInfo).port}`;
    echoFront = await startFront('echo', echoUpstream);
    smallBodies = await startFront('small', echoUpstream, '2kb');
  });

  after(async () => {
    await Promise.all([front?.process.stop(), echoFront?.process.stop(), smallBodies?.process.stop()]);
    await app?.close();
    echo?.closeAllConnections();
    await new Promise((resolve) => echo?.close(resolve));
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('serves the API over HTTPS with HSTS and without naming its version', async () => {
    const response = await send(`${front.https}/`, { ca });
    assert.equal(response.status, 200);
    assert.ok(response.json().name, response.text);
    assert.equal(response.headers['strict-transport-security'], 'max-age=63072000');
    assert.equal(response.headers.server, 'nginx');
    // The app's own headers pass through.
    assert.equal(response.headers['x-content-type-options'], 'nosniff');
  });

  test('the token flow works over HTTPS: password grant, authenticated read, refresh', async () => {
    const grant = await send(`${front.https}/security/generate-token`, {
      ca,
      method: 'POST',
      json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
    });
    assert.equal(grant.status, 200, grant.text);
    assert.equal(grant.headers['cache-control'], 'no-store');
    const tokens = grant.json() as { access_token: string; refresh_token: string };
    const id = String(decodeJwtPart(tokens.access_token, 1).sub);
    const read = await send(`${front.https}/users/${id}`, { ca, token: tokens.access_token });
    assert.equal(read.status, 200, read.text);
    const refreshed = await send(`${front.https}/security/refresh-token`, {
      ca,
      method: 'POST',
      json: {
        grant_type: 'refresh_token',
        scope: 'api',
        ...FRONTEND_CLIENT,
        refresh_token: tokens.refresh_token,
      },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
  });

  test('plain HTTP answers 301 to the same path and query over HTTPS, and never reaches the app', async () => {
    const get = await send(`${front.http}/users/some-id?page=2`);
    assert.equal(get.status, 301);
    assert.equal(get.headers.location, 'https://127.0.0.1/users/some-id?page=2');
    const post = await send(`${front.http}/security/generate-token`, {
      method: 'POST',
      json: { grant_type: 'password', ...SEEDED_USER },
      headers: { Host: 'api.example.com' },
    });
    assert.equal(post.status, 301);
    assert.equal(post.headers.location, 'https://api.example.com/security/generate-token');
  });

  test('30 client_credentials grants in a row from one address are all answered 200', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const grant = await send(`${front.https}/security/generate-token`, {
        ca,
        method: 'POST',
        json: { grant_type: 'client_credentials', scope: 'api', ...ADMIN_CLIENT },
      });
      statuses.push(grant.status);
    }
    assert.deepEqual(statuses, Array(30).fill(200));
  });

  test("a body over 1 MB is refused with 413 by nginx, like the app would, in the API's format", async () => {
    const post = (path: string) =>
      send(`${front.https}${path}`, {
        ca,
        method: 'POST',
        body: Buffer.alloc(1024 * 1024 + 1, 'a'),
        headers: { 'Content-Type': 'application/json' },
      });
    const token = await post('/security/generate-token');
    assert.equal(token.status, 413);
    assert.equal(token.headers.server, 'nginx', 'answered by nginx, not the app');
    assertOAuthError(token, 413, 'invalid_request');
    const api = await post('/account/register');
    assert.equal(api.status, 413);
    assertProblem(api, 413);
  });

  test('a request header nginx cannot read is a 400 problem', async () => {
    const response = await send(`${front.https}/`, { ca, headers: { 'X-Large': 'a'.repeat(20_000) } });
    assertProblem(response, 400);
  });

  test('with BODY_LIMIT=2kb nginx passes a body of 2048 bytes and refuses one of 2049 with 413', async () => {
    const post = (size: number) =>
      send(`${smallBodies.https}/anything`, {
        ca,
        method: 'POST',
        body: Buffer.alloc(size, 'a'),
        headers: { 'Content-Type': 'application/octet-stream' },
      });
    assert.equal((await post(2048)).status, 200);
    assert.equal((await post(2049)).status, 413);
  });

  test('avatar uploads pass nginx up to AVATAR_SIZE_LIMIT as a form, beyond BODY_LIMIT; more is 413', async () => {
    const identity = `nginx-avatar-${Date.now()}@example.com`;
    await storeAccount(app.app.stores.users, (p) => app.app.passwords.hash(p), { identity });
    const { access_token: token } = await userLogin(app.url, identity);
    // The largest image the app takes by default (1 MiB), in the form a browser sends.
    const image = png(8, 8, undefined, 1024 * 1024);
    const boundary = 'nginx-test-boundary';
    const form = (bytes: Buffer) =>
      Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="avatar"; filename="me.png"\r\n` +
            'Content-Type: image/png\r\n\r\n',
        ),
        bytes,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
    const put = (body: Buffer) =>
      send(`${front.https}/users/my-account/avatar`, {
        ca,
        method: 'PUT',
        token,
        body,
        headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      });
    const stored = await put(form(image));
    assert.equal(stored.status, 204, stored.text);
    const served = await send(`${front.https}/users/my-account/avatar`, { ca, token });
    assert.equal(served.status, 200);
    assert.equal(served.headers['content-type'], 'image/png');
    // Larger than the app would read even as a form: nginx refuses it itself.
    const refused = await put(Buffer.alloc(1024 * 1024 + MULTIPART_ALLOWANCE + 1, 'a'));
    assert.equal(refused.status, 413);
    assert.equal(refused.headers.server, 'nginx');
  });

  test('with BODY_LIMIT=2kb, avatar paths still take their own limit while every other path keeps 2kb', async () => {
    const put = (path: string, size: number) =>
      send(`${smallBodies.https}${path}`, {
        ca,
        method: 'PUT',
        body: Buffer.alloc(size, 'a'),
        headers: { 'Content-Type': 'image/png' },
      });
    assert.equal((await put('/users/my-account/avatar', 64 * 1024)).status, 200);
    assert.equal((await put(`/users/${'0'.repeat(8)}/avatar`, 64 * 1024)).status, 200);
    assert.equal((await put('/users/my-account', 64 * 1024)).status, 413);
    assert.equal((await put('/users/my-account/avatar/x', 64 * 1024)).status, 413);
  });

  test('X-Forwarded-For is overwritten with the client address and Client-IP is removed', async () => {
    seen.length = 0;
    const response = await send(`${echoFront.https}/anything`, {
      ca,
      headers: {
        'X-Forwarded-For': '8.8.8.8',
        'Client-IP': '9.9.9.9',
        'X-Real-IP': '1.1.1.1',
        Forwarded: 'for=1.2.3.4',
      },
    });
    assert.equal(response.status, 200);
    const headers = seen[0];
    assert.ok(headers);
    assert.equal(headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(headers['x-real-ip'], '127.0.0.1');
    assert.equal(headers['client-ip'], undefined);
    assert.equal(headers.forwarded, undefined);
    assert.equal(headers['x-forwarded-proto'], 'https');
  });

  test('nginx keeps its connections to the upstream open between requests', async () => {
    const before = echoConnections;
    for (let i = 0; i < 5; i++) assert.equal((await send(`${echoFront.https}/`, { ca })).status, 200);
    assert.ok(
      echoConnections - before <= 1,
      `${echoConnections - before} new upstream connections for 5 requests`,
    );
  });

  test('the largest authorization request the service accepts goes through: the page, the post, the redirect', async () => {
    const largest = await registerLargestRequest(app, await superuserToken(app.url));
    const query = authorizationQuery(largest.clientName, pkce().challenge, {
      redirect_uri: largest.redirectUri,
      scope: largest.scope,
      state: largest.state,
    });
    const page = await send(`${front.https}/security/authorize?${query}`, { ca });
    assert.equal(page.status, 200, page.text.slice(0, 300));
    const posted = await send(`${front.https}/security/authorize`, {
      ca,
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf_token: csrfTokenOf(page.text), ...SEEDED_USER }).toString(),
    });
    assert.equal(posted.status, 303, posted.text.slice(0, 300));
    const back = new URL(String(posted.headers.location));
    assert.equal(back.searchParams.get('state'), largest.state);
    assert.ok(back.searchParams.get('code'));
  });

  test('the error report endpoint sees the address nginx saw, not the one the client claims', async (t) => {
    const report = (base: string, headers: Record<string, string>) =>
      send(`${base}/error-report`, {
        ca,
        method: 'POST',
        json: { message: 'nginx test report' },
        headers: { 'Error-Reporting-Token': REPORT_TOKEN, ...headers },
      });
    const spoofed = { 'X-Forwarded-For': '8.8.8.8', 'Client-IP': '9.9.9.9' };
    const direct = await report(app.url, spoofed);
    if (direct.status === 404) return t.skip('POST /error-report is not part of this build');
    // Straight to the app, the spoofed public address is believed (docs/security.md) and is not whitelisted.
    assert.equal(direct.status, 403, direct.text);
    // Through nginx the client's headers are replaced: the whitelisted loopback address remains.
    const proxied = await report(front.https, spoofed);
    assert.equal(proxied.status, 201, proxied.text);
    const lines = (await readFile(join(app.logDir, 'error-report-endpoint-log.log'), 'utf8'))
      .trim()
      .split('\n');
    const last = JSON.parse(lines.at(-1) ?? '{}') as Record<string, unknown>;
    assert.equal(last.clientAddress, '127.0.0.1');
    assert.ok(!lines.join('\n').includes('8.8.8.8') && !lines.join('\n').includes('9.9.9.9'));
  });
});

/** The API routes that check a password or a client secret (docs/api.md), as a method and a path. */
const API_CREDENTIAL_CHECKS: readonly (readonly [string, string])[] = [
  ['POST', '/security/generate-token'],
  ['POST', '/security/refresh-token'],
  ['PATCH', '/users/my-account'],
  ['DELETE', '/users/my-account'],
  ['POST', '/users/my-account/identity'],
  ['PATCH', '/admins/my-account'],
  ['PATCH', `/account/change-identity/${'A'.repeat(43)}`],
  ['PATCH', `/account/activate/${'B'.repeat(43)}`],
];

const SIGN_IN_FORM = '/security/authorize';

/** The forms of the activation and change-of-address pages, which check the account's password too. */
const PAGE_PASSWORD_FORMS = [
  `/account/change-identity/${'A'.repeat(43)}`,
  `/account/activate/${'B'.repeat(43)}`,
];

describe('nginx limits only the password forms, per address, and never an API route', { skip }, () => {
  let echo: Server;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'nginx-limits-'));
    execFileSync('sh', [join(REPO_ROOT, 'ops/make-cert.sh'), join(root, 'certs'), 'localhost'], {
      stdio: 'ignore',
    });
    ca = await readFile(join(root, 'certs/tls.crt'), 'utf8');
    echo = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    echo?.closeAllConnections();
    await new Promise((resolve) => echo?.close(resolve));
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A front of its own: nginx keeps the budget of each address in its own memory zone. */
  async function freshFront(name: string): Promise<Front> {
    return startFront(name, `127.0.0.1:${(echo.address() as AddressInfo).port}`);
  }

  const request = (front: Front, method: string, path: string) =>
    send(`${front.https}${path}`, { ca, method, body: 'x=1' });

  test('the sign-in form: 21 posts at once pass (1 + a burst of 20), then 429 as a problem with Retry-After; the page never', async () => {
    const front = await freshFront('sign-in');
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 23; i++) statuses.push((await request(front, 'POST', SIGN_IN_FORM)).status);
      assert.deepEqual(statuses.slice(0, 21), Array(21).fill(200), String(statuses));
      const refused = await request(front, 'POST', SIGN_IN_FORM);
      assertProblem(refused, 429);
      assert.equal(refused.headers['retry-after'], '3', 'the budget refills one post every 3 s');
      // Spelt otherwise, it is the same path to nginx (and to the app, whose routes ignore
      // case) and counts the same.
      assert.equal((await request(front, 'POST', `${SIGN_IN_FORM}/`)).status, 429);
      assert.equal((await request(front, 'POST', SIGN_IN_FORM.toUpperCase())).status, 429);
      assert.equal((await send(`${front.https}${SIGN_IN_FORM}`, { ca })).status, 200, 'GET is not limited');
      // The pages' password forms share the budget, so switching forms gains a guesser nothing.
      for (const path of PAGE_PASSWORD_FORMS) {
        assert.equal((await request(front, 'POST', path)).status, 429, path);
        assert.equal((await send(`${front.https}${path}`, { ca })).status, 200, `GET ${path} is not limited`);
      }
    } finally {
      await front.process.stop();
    }
  });

  test('API routes, the token endpoints and those that check a password among them, are never limited, even once the form budget is spent', async () => {
    const front = await freshFront('api');
    try {
      for (let i = 0; i < 22; i++) await request(front, 'POST', SIGN_IN_FORM);
      assert.equal((await request(front, 'POST', SIGN_IN_FORM)).status, 429);
      for (const [method, path] of API_CREDENTIAL_CHECKS) {
        const statuses: number[] = [];
        for (let i = 0; i < 40; i++) statuses.push((await request(front, method, path)).status);
        assert.deepEqual(statuses, Array(40).fill(200), `${method} ${path}`);
      }
    } finally {
      await front.process.stop();
    }
  });
});

describe("nginx answers for an app that is down in the API's format", { skip }, () => {
  let front: Front;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'nginx-down-'));
    execFileSync('sh', [join(REPO_ROOT, 'ops/make-cert.sh'), join(root, 'certs'), 'localhost'], {
      stdio: 'ignore',
    });
    ca = await readFile(join(root, 'certs/tls.crt'), 'utf8');
    // A port nothing listens on: every app container restarting at once.
    front = await startFront('down', `127.0.0.1:${await freePort()}`);
  });
  after(async () => {
    await front?.process.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('502 is a problem with Retry-After; at the token endpoints OAuth JSON, temporarily_unavailable', async () => {
    const api = await send(`${front.https}/users/my-account`, { ca });
    assertProblem(api, 502);
    assert.equal(api.headers['retry-after'], '5');
    for (const path of ['/security/generate-token', '/security/refresh-token']) {
      const token = await send(`${front.https}${path}`, {
        ca,
        method: 'POST',
        json: { grant_type: 'client_credentials', scope: 'api', ...ADMIN_CLIENT },
      });
      assertOAuthError(token, 502, 'temporarily_unavailable');
      assert.equal(token.headers['retry-after'], '5');
    }
  });
});
