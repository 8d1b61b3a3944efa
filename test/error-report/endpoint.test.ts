import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ERROR_REPORT_LOG_FILE, MAX_MESSAGE_LENGTH } from '../../src/error-report/error-report.ts';
import { type JsonResponse, request } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const WEB_TOKEN = 'web-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const MOBILE_TOKEN = 'mobile-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';

/** Test clients connect from 127.0.0.1, which is deliberately not on this whitelist. */
const CONFIGURED = {
  ERROR_REPORT_TOKENS: `web:${WEB_TOKEN},mobile:${MOBILE_TOKEN}`,
  ERROR_REPORT_IP_WHITELIST: '8.8.8.0/24,2606:4700::/32,10.0.0.0/8,192.168.1.7',
  ERROR_REPORT_DOMAIN_WHITELIST: 'app.example.com',
};

interface Sent {
  token?: string;
  headers?: Record<string, string>;
  json?: unknown;
}

function report(server: TestServer, sent: Sent = {}): Promise<JsonResponse> {
  return request(server.url, 'POST', '/error-report', {
    json: 'json' in sent ? sent.json : { message: 'TypeError: x is undefined' },
    headers: {
      ...(sent.token === undefined ? {} : { 'Error-Reporting-Token': sent.token }),
      ...sent.headers,
    },
  });
}

function reportLines(server: TestServer): Record<string, unknown>[] {
  const file = join(server.logDir, ERROR_REPORT_LOG_FILE);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function assertProblem(response: JsonResponse, status: number, detail: RegExp): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.match(String(response.body.detail), detail);
}

describe('POST /error-report', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: CONFIGURED });
  });
  after(() => server.close());

  /** Runs `send` and checks it was refused as expected, with nothing written. */
  async function assertRefused(sent: Sent, status: number, detail: RegExp): Promise<void> {
    const before = reportLines(server).length;
    assertProblem(await report(server, sent), status, detail);
    assert.equal(reportLines(server).length, before, 'nothing is written for a refused report');
  }

  async function assertAccepted(sent: Sent): Promise<Record<string, unknown>> {
    const before = reportLines(server).length;
    const response = await report(server, sent);
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const lines = reportLines(server);
    assert.equal(lines.length, before + 1, 'exactly one line per accepted report');
    return lines.at(-1) ?? {};
  }

  describe('refusals', () => {
    test('without an Error-Reporting-Token header: 401 naming the scheme', async () => {
      const response = await report(server, { headers: { 'X-Forwarded-For': '8.8.8.8' } });
      assertProblem(response, 401, /Error-Reporting-Token header is required/);
      assert.equal(response.headers.get('www-authenticate'), 'Error-Reporting-Token');
      await assertRefused({ token: '', headers: { 'X-Forwarded-For': '8.8.8.8' } }, 401, /required/);
    });

    test('with a wrong token from a whitelisted client: 403', async () => {
      for (const token of [
        'wrong-token-cccccccccccccccccccccccccccc',
        WEB_TOKEN.slice(0, -1),
        `${WEB_TOKEN}x`,
        'web',
      ]) {
        await assertRefused({ token, headers: { 'X-Forwarded-For': '8.8.8.8' } }, 403, /token is not valid/i);
      }
    });

    test('with the right token from a client on neither whitelist: 403', async () => {
      await assertRefused({ token: WEB_TOKEN }, 403, /not allowed to report errors/);
      await assertRefused(
        { token: WEB_TOKEN, headers: { 'X-Forwarded-For': '9.9.9.9' } },
        403,
        /not allowed/,
      );
      await assertRefused(
        { token: WEB_TOKEN, headers: { Origin: 'https://evil.example.com' } },
        403,
        /not allowed/,
      );
      await assertRefused(
        { token: WEB_TOKEN, headers: { Origin: 'https://app.example.com.evil.test' } },
        403,
        /not allowed/,
      );
    });

    test('a private X-Forwarded-For is not believed: the check falls through to Client-IP, then the socket', async () => {
      // 10.1.2.3 is on the whitelist (10.0.0.0/8), but as a private X-Forwarded-For it is skipped.
      await assertRefused(
        { token: WEB_TOKEN, headers: { 'X-Forwarded-For': '10.1.2.3' } },
        403,
        /not allowed/,
      );
      await assertRefused(
        { token: WEB_TOKEN, headers: { 'X-Forwarded-For': '10.1.2.3', 'Client-IP': '9.9.9.9' } },
        403,
        /not allowed/,
      );
    });

    test('a public X-Forwarded-For wins over a whitelisted Client-IP', async () => {
      await assertRefused(
        { token: WEB_TOKEN, headers: { 'X-Forwarded-For': '9.9.9.9', 'Client-IP': '192.168.1.7' } },
        403,
        /not allowed/,
      );
    });

    test('a body that is not a report: 400', async () => {
      const headers = { 'X-Forwarded-For': '8.8.8.8' };
      for (const json of [
        {},
        { message: '' },
        { message: 42 },
        { message: 'x'.repeat(MAX_MESSAGE_LENGTH + 1) },
        { message: 'ok', context: 'not an object' },
        { message: 'ok', unexpected: true },
        ['message'],
        'message',
      ]) {
        await assertRefused({ token: WEB_TOKEN, headers, json }, 400, /invalid/);
      }
      const before = reportLines(server).length;
      const malformed = await request(server.url, 'POST', '/error-report', {
        raw: '{"message":',
        headers: { ...headers, 'Error-Reporting-Token': WEB_TOKEN, 'Content-Type': 'application/json' },
      });
      assertProblem(malformed, 400, /not valid JSON/);
      assert.equal(reportLines(server).length, before);
    });
  });

  describe('acceptances', () => {
    test('a whitelisted public X-Forwarded-For: 201 and one JSON line with time, alias and address', async () => {
      const started = Date.now();
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { 'X-Forwarded-For': '8.8.8.8, 10.0.0.1' },
      });
      assert.equal(line.tokenAlias, 'web');
      assert.equal(line.clientAddress, '8.8.8.8');
      assert.equal(line.addressSource, 'X-Forwarded-For');
      assert.equal(line.message, 'TypeError: x is undefined');
      assert.ok(Date.parse(String(line.time)) >= started - 1000);
    });

    test('the token may be any configured one; its alias is recorded, never the token', async () => {
      const line = await assertAccepted({ token: MOBILE_TOKEN, headers: { 'X-Forwarded-For': '8.8.8.4' } });
      assert.equal(line.tokenAlias, 'mobile');
      const text = readFileSync(join(server.logDir, ERROR_REPORT_LOG_FILE), 'utf8');
      assert.ok(!text.includes(WEB_TOKEN) && !text.includes(MOBILE_TOKEN));
    });

    test('a private X-Forwarded-For falls through to a whitelisted Client-IP', async () => {
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { 'X-Forwarded-For': '192.168.0.99', 'Client-IP': '192.168.1.7' },
      });
      assert.equal(line.clientAddress, '192.168.1.7');
      assert.equal(line.addressSource, 'Client-IP');
    });

    test('garbage in X-Forwarded-For is ignored in favour of Client-IP', async () => {
      for (const forwarded of ['unknown', '8.8.8.8:443', 'not, an, address']) {
        const line = await assertAccepted({
          token: WEB_TOKEN,
          headers: { 'X-Forwarded-For': forwarded, 'Client-IP': '10.20.30.40' },
        });
        assert.equal(line.clientAddress, '10.20.30.40', forwarded);
      }
    });

    test('IPv6 addresses and CIDR ranges, and IPv4-mapped IPv6 normalised', async () => {
      const v6 = await assertAccepted({
        token: WEB_TOKEN,
        headers: { 'X-Forwarded-For': '2606:4700:0:0::1111' },
      });
      assert.equal(v6.clientAddress, '2606:4700::1111');
      const mapped = await assertAccepted({
        token: WEB_TOKEN,
        headers: { 'X-Forwarded-For': '::ffff:8.8.8.200' },
      });
      assert.equal(mapped.clientAddress, '8.8.8.200');
      await assertRefused(
        { token: WEB_TOKEN, headers: { 'X-Forwarded-For': '2606:4701::1' } },
        403,
        /not allowed/,
      );
    });

    test('a whitelisted Origin host admits a client whose address is not whitelisted', async () => {
      const line = await assertAccepted({ token: WEB_TOKEN, headers: { Origin: 'https://app.example.com' } });
      assert.equal(line.origin, 'https://app.example.com');
      assert.equal(line.clientAddress, '127.0.0.1');
      assert.equal(line.addressSource, 'socket');
    });

    test('context is kept as sent, except secrets, which are blanked', async () => {
      const context = {
        url: 'https://app.example.com/checkout',
        release: '2.4.1',
        request: {
          headers: { Authorization: 'Bearer leaked-access-token' },
          body: { password: 'leaked-password' },
        },
      };
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { Origin: 'https://app.example.com' },
        json: { message: 'Checkout failed', context },
      });
      assert.deepEqual(line.context, {
        url: 'https://app.example.com/checkout',
        release: '2.4.1',
        request: { headers: { Authorization: '[redacted]' }, body: { password: '[redacted]' } },
      });
    });

    test('header-style secrets and the configured tokens themselves, in any encoding, never reach the log', async () => {
      const encoded = [
        WEB_TOKEN,
        MOBILE_TOKEN,
        encodeURIComponent(MOBILE_TOKEN),
        Buffer.from(MOBILE_TOKEN).toString('base64'),
        Buffer.from(WEB_TOKEN).toString('base64url'),
      ];
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { Origin: 'https://app.example.com' },
        json: {
          message: `Request failed\nError-Reporting-Token: abc123\nCookie: session=s3cr3t-cookie\nsent ${MOBILE_TOKEN}`,
          context: { note: encoded.join(' '), [WEB_TOKEN]: 'as a key', log: "{'password': 'pw-in-quotes'}" },
        },
      });
      const written = readFileSync(join(server.logDir, ERROR_REPORT_LOG_FILE), 'utf8');
      for (const secret of [...encoded, 'abc123', 's3cr3t-cookie', 'pw-in-quotes']) {
        assert.ok(!written.includes(secret), `${secret} was written`);
      }
      assert.match(String(line.message), /^Request failed\nError-Reporting-Token: \[redacted\]\n/);
    });

    test('the hash of a mailed link and the code and state of a redirect never reach the log', async () => {
      const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
      const code = 'SplxlOBeZQQYbYS6WxSbIAcodecodecode';
      const state = 'af0ifjsldkj-state-of-the-app';
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { Origin: 'https://app.example.com' },
        json: {
          message: `PATCH https://api.example.com/account/reset-password/${hash} failed with 500`,
          context: {
            url: `https://app.example.com/callback?code=${code}&state=${state}`,
            route: `#/account/activate/${hash}`,
            breadcrumbs: [`navigated to /login?next=%2Faccount%2Fchange-identity%2F${hash}`],
          },
        },
      });
      const written = readFileSync(join(server.logDir, ERROR_REPORT_LOG_FILE), 'utf8');
      for (const secret of [hash, code, state]) assert.ok(!written.includes(secret), `${secret} was written`);
      assert.equal(
        line.message,
        'PATCH https://api.example.com/account/reset-password/[redacted] failed with 500',
      );
      assert.deepEqual(line.context, {
        url: 'https://app.example.com/callback?code=[redacted]&state=[redacted]',
        route: '#/account/activate/[redacted]',
        breadcrumbs: ['navigated to /login?next=%2Faccount%2Fchange-identity%2F[redacted]'],
      });
    });

    test('a bare link hash, anywhere, and link codes by name never reach the log', async () => {
      const hash = 'Qw3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { Origin: 'https://app.example.com' },
        json: {
          message: `Reset failed for hash ${hash}`,
          context: {
            form: { hash: 'short-hash-1', resetCode: 'reset-code-2' },
            state: { activationCode: 'activation-code-3', confirmationCode: 'confirmation-code-4' },
            code: 'ERR_NETWORK',
            breadcrumbs: [`clicked "${hash}"`],
          },
        },
      });
      const written = readFileSync(join(server.logDir, ERROR_REPORT_LOG_FILE), 'utf8');
      for (const secret of [hash, 'short-hash-1', 'reset-code-2', 'activation-code-3', 'confirmation-code-4'])
        assert.ok(!written.includes(secret), `${secret} was written`);
      assert.equal(line.message, 'Reset failed for hash [redacted]');
      assert.deepEqual(line.context, {
        form: { hash: '[redacted]', resetCode: '[redacted]' },
        state: { activationCode: '[redacted]', confirmationCode: '[redacted]' },
        code: 'ERR_NETWORK',
        breadcrumbs: ['clicked "[redacted]"'],
      });
    });

    test('a message of the maximum length is accepted', async () => {
      const line = await assertAccepted({
        token: WEB_TOKEN,
        headers: { 'X-Forwarded-For': '8.8.8.8' },
        json: { message: 'm'.repeat(MAX_MESSAGE_LENGTH) },
      });
      assert.equal(String(line.message).length, MAX_MESSAGE_LENGTH);
    });
  });
});

describe('POST /error-report by socket address', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      env: { ERROR_REPORT_TOKENS: `web:${WEB_TOKEN}`, ERROR_REPORT_IP_WHITELIST: '127.0.0.1' },
    });
  });
  after(() => server.close());

  test('without proxy headers the socket address is checked', async () => {
    const response = await report(server, { token: WEB_TOKEN });
    assert.equal(response.status, 201);
    assert.deepEqual(response.body, { message: 'Error report received' });
    const [line] = reportLines(server);
    assert.equal(line?.clientAddress, '127.0.0.1');
    assert.equal(line?.addressSource, 'socket');
  });

  test('a spoofed Client-IP replaces the socket address, so it can also lock a client out', async () => {
    const response = await report(server, { token: WEB_TOKEN, headers: { 'Client-IP': '10.0.0.1' } });
    assertProblem(response, 403, /not allowed/);
  });
});

describe('POST /error-report without configured tokens', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { ERROR_REPORT_IP_WHITELIST: '127.0.0.1' } });
  });
  after(() => server.close());

  test('refuses every report with 403 saying error reporting is not configured, writing nothing', async () => {
    for (const token of [undefined, WEB_TOKEN]) {
      assertProblem(await report(server, { token }), 403, /not configured/);
    }
    assert.equal(existsSync(join(server.logDir, ERROR_REPORT_LOG_FILE)), false);
  });
});
