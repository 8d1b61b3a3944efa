import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Application, createApplication } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { type AnyRoute, defineRoute } from '../../src/http/route.ts';
import { createErrorLogger, errorLogPath } from '../../src/logging/error-log.ts';
import { generateKeys } from '../../src/oauth/key-rotation.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { openKeyRingStore } from '../../src/services.ts';
import { request } from '../support/http.ts';

const SECRETS = {
  password: 'hunter2-password-value',
  token: 'eyJ-token-value-abcdef',
  authorization: 'Bearer authorization-header-value',
  reportingToken: 'error-reporting-token-value',
  clientSecret: 'client-secret-value',
  codeVerifier: 'pkce-code-verifier-value',
};

interface RedactedError {
  password: string;
  config: { headers: Record<string, string>; data: string };
  response: { body: { nested: { deeper: { refresh_token: string } } } };
  cause: { password: string; message: string };
}

function readLines(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function assertNoSecret(text: string): void {
  for (const [name, value] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(value.replace(/^Bearer /, '')), `${name} reached the log: ${text}`);
  }
}

/** An error as a careless library might throw it: the request it made, secrets and all. */
function errorCarryingSecrets(): Error {
  const error = new Error(`request failed: Authorization: ${SECRETS.authorization}`, {
    cause: Object.assign(new Error('socket hang up'), { password: SECRETS.password }),
  });
  return Object.assign(error, {
    password: SECRETS.password,
    token: SECRETS.token,
    config: {
      headers: {
        Authorization: SECRETS.authorization,
        'Error-Reporting-Token': SECRETS.reportingToken,
      },
      data: JSON.stringify({
        client_secret: SECRETS.clientSecret,
        code_verifier: SECRETS.codeVerifier,
        username: 'someone',
      }),
      url: `/oauth?access_token=${SECRETS.token}`,
    },
    response: { body: { nested: { deeper: { refresh_token: SECRETS.token } } } },
  });
}

describe('error log file', () => {
  let logDir: string;
  before(async () => {
    logDir = await mkdtemp(join(tmpdir(), 'error-log-'));
  });
  after(() => rm(logDir, { recursive: true, force: true }));

  test('writes one JSON line per error to error-log-YYYY-MM-DD.log of the UTC day, one file per day', () => {
    const dir = join(logDir, 'days');
    let now = new Date('2026-03-01T23:59:59.500Z');
    const log = createErrorLogger({ logDir: dir, service: 'billing', now: () => now });
    log.error({ err: new Error('before midnight') });
    now = new Date('2026-03-02T00:00:00.100Z');
    log.error({ err: new Error('after midnight') });
    log.error({ err: new Error('still the second') });

    assert.deepEqual(readdirSync(dir).sort(), ['error-log-2026-03-01.log', 'error-log-2026-03-02.log']);
    const [first] = readLines(join(dir, 'error-log-2026-03-01.log'));
    const second = readLines(join(dir, 'error-log-2026-03-02.log'));
    assert.equal(second.length, 2);
    assert.equal(first?.name, 'billing', 'the logger is named after the service');
    assert.equal(first?.level, 'error');
    assert.equal(first?.msg, 'before midnight');
    const err = first?.err as { message: string; stack: string } | undefined;
    assert.equal(err?.message, 'before midnight');
    assert.match(String(err?.stack), /^Error: before midnight\n\s+at /);
    assert.equal(typeof first?.pid, 'number');
    assert.equal(
      errorLogPath('log', new Date('2026-12-31T23:00:00-05:00')),
      join('log', 'error-log-2027-01-01.log'),
    );
  });

  test('blanks passwords, tokens, secrets and the Authorization and Error-Reporting-Token headers', () => {
    const dir = join(logDir, 'redaction');
    const log = createErrorLogger({ logDir: dir, service: 'svc' });
    log.error({
      err: errorCarryingSecrets(),
      password: SECRETS.password,
      client_secret: SECRETS.clientSecret,
      code_verifier: SECRETS.codeVerifier,
      headers: { authorization: SECRETS.authorization, 'error-reporting-token': SECRETS.reportingToken },
      request: { headers: { authorization: SECRETS.authorization } },
    });
    const [file] = readdirSync(dir);
    const text = readFileSync(join(dir, file ?? ''), 'utf8');
    assertNoSecret(text);
    const [line] = readLines(join(dir, file ?? ''));
    const err = line?.err as RedactedError;
    assert.equal(line?.password, '[redacted]');
    assert.equal(
      (line?.headers as Record<string, string> | undefined)?.['error-reporting-token'],
      '[redacted]',
    );
    assert.equal(err.password, '[redacted]');
    assert.equal(err.config.headers.Authorization, '[redacted]');
    assert.equal(err.config.headers['Error-Reporting-Token'], '[redacted]');
    assert.equal(err.response.body.nested.deeper.refresh_token, '[redacted]');
    assert.equal(err.cause.password, '[redacted]');
    assert.equal(err.cause.message, 'socket hang up', 'what is not secret stays readable');
    assert.match(err.config.data, /"username":"someone"/);
    assert.match(String(line?.msg), /^request failed: Authorization: \[redacted\]$/);
  });

  test('blanks the hash of a mailed link and the code and state of a redirect in messages and members', () => {
    const dir = join(logDir, 'links');
    const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
    const log = createErrorLogger({ logDir: dir, service: 'svc' });
    log.error(
      {
        err: new Error(`fetch https://api.example.com/account/reset-password/${hash} failed`),
        referer: 'https://app.example.com/cb?code=the-code-value&state=the-state-value',
      },
      `while handling /account/activate/${hash}`,
    );
    const [file] = readdirSync(dir);
    const text = readFileSync(join(dir, file ?? ''), 'utf8');
    for (const secret of [hash, 'the-code-value', 'the-state-value'])
      assert.ok(!text.includes(secret), `${secret} reached the log: ${text}`);
    const [line] = readLines(join(dir, file ?? ''));
    assert.equal(line?.msg, 'while handling /account/activate/[redacted]');
    assert.equal(line?.referer, 'https://app.example.com/cb?code=[redacted]&state=[redacted]');
  });

  test('a log that cannot be written does not throw: the line goes to standard error', () => {
    const dir = join(logDir, 'unwritable');
    const log = createErrorLogger({ logDir: dir, service: 'svc' });
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'a file where the directory was');
    const written: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      assert.doesNotThrow(() => log.error({ err: new Error('nowhere to go') }));
    } finally {
      process.stderr.write = original;
    }
    assert.match(written.join(''), /nowhere to go/);
  });

  test('several processes append to the same day file without interleaving lines', async () => {
    const dir = join(logDir, 'concurrent');
    const writers = 4;
    const count = 200;
    const size = 20_000; // far above PIPE_BUF and a page: the whole line is one write
    const script = new URL('./fixtures/write-error-lines.ts', import.meta.url).pathname;
    await Promise.all(
      Array.from({ length: writers }, (_, writer) => {
        const child = spawn(process.execPath, [script, dir, String(writer), String(count), String(size)], {
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        return new Promise<void>((resolve, reject) =>
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}`)))),
        );
      }),
    );
    const files = readdirSync(dir);
    const lines = files.flatMap((file) => readLines(join(dir, file)));
    assert.equal(lines.length, writers * count);
    for (let writer = 0; writer < writers; writer++) {
      const own = lines.filter((line) => line.writer === String(writer));
      assert.deepEqual(
        own.map((line) => line.sequence),
        Array.from({ length: count }, (_, sequence) => sequence),
        `writer ${writer} lines complete and in order`,
      );
      assert.ok(own.every((line) => line.padding === String(writer).repeat(size)));
    }
  });
});

describe('unhandled exceptions in a request', () => {
  let root: string;
  let app: Application;
  let url: string;
  let logDir: string;
  const throwing: AnyRoute[] = [
    defineRoute({
      method: 'POST',
      path: '/test/explode/:id',
      name: 'test::explode',
      summary: 'Throws an error carrying secrets',
      tags: ['test'],
      permission: 'public',
      responses: {},
      handler() {
        throw errorCarryingSecrets();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/test/throw-string',
      name: 'test::throw-string',
      summary: 'Throws something that is not an Error',
      tags: ['test'],
      permission: 'public',
      responses: {},
      handler() {
        throw { password: SECRETS.password, note: 'not an Error' };
      },
    }),
  ];

  before(async () => {
    // startTestServer does not take extra routes, so this suite composes the app itself.
    root = await mkdtemp(join(tmpdir(), 'error-log-app-'));
    logDir = join(root, 'log');
    await generateKeys(openKeyRingStore(join(root, 'keys')), { force: false });
    const config = loadConfig(
      { HOST: '127.0.0.1', PORT: '0', KEYS_DIR: join(root, 'keys'), LOG_DIR: logDir, BCRYPT_COST: '4' },
      readPackageInfo(),
    );
    app = await createApplication(config, { log: () => undefined, extraRoutes: throwing });
    await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    app.server.closeAllConnections();
    await new Promise((resolve) => app.server.close(resolve));
    await app.close();
    await rm(root, { recursive: true, force: true });
  });

  function todaysLines(): Record<string, unknown>[] {
    const file = errorLogPath(logDir, new Date());
    return existsSync(file) ? readLines(file) : [];
  }

  test('the client gets a generic 500 problem; the log gets the error, its stack and the request facts', async () => {
    const response = await request(url, 'POST', `/test/explode/42?access_token=${SECRETS.token}`, {
      json: { password: SECRETS.password, refresh_token: SECRETS.token },
      headers: { Authorization: SECRETS.authorization, 'Error-Reporting-Token': SECRETS.reportingToken },
    });

    assert.equal(response.status, 500);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(response.body, {
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred',
    });

    const lines = todaysLines();
    assert.equal(lines.length, 1);
    const [line] = lines;
    assert.equal(line?.method, 'POST');
    // The pattern, not the path: a path segment may be a live activation or reset hash.
    assert.equal(line?.path, '/test/explode/:id');
    assert.equal(line?.route, 'test::explode');
    assert.equal(line?.name, readPackageInfo().name);
    const err = line?.err as Record<string, string>;
    assert.equal(err.type, 'Error');
    assert.match(err.stack ?? '', /request failed[\s\S]+at /);
    assertNoSecret(readFileSync(errorLogPath(logDir, new Date()), 'utf8'));
  });

  test('a thrown value that is not an Error is logged too, redacted', async () => {
    const before = todaysLines().length;
    const response = await request(url, 'GET', '/test/throw-string');
    assert.equal(response.status, 500);
    assert.equal(response.body.detail, 'An unexpected error occurred');
    const lines = todaysLines();
    assert.equal(lines.length, before + 1);
    assert.deepEqual(lines.at(-1)?.err, { password: '[redacted]', note: 'not an Error' });
    assert.equal(lines.at(-1)?.route, 'test::throw-string');
  });

  test('problems are answers, not errors: they are not logged', async () => {
    const before = todaysLines().length;
    assert.equal((await request(url, 'GET', '/nowhere')).status, 404);
    assert.equal(
      (
        await request(url, 'POST', '/test/explode/1', {
          raw: '{',
          headers: { 'Content-Type': 'application/json' },
        })
      ).status,
      400,
    );
    assert.equal(todaysLines().length, before);
  });
});
