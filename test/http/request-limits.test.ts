import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MAX_FIELDS } from '../../src/http/body.ts';
import {
  privateServiceEnv,
  type ServiceProcess,
  send,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

/**
 * Bodies are read before authentication on every route, so what one anonymous request can make
 * a worker do is measured here on the real entry point with a single worker: while that worker
 * is busy, the whole service is.
 */
describe('request bodies from anyone', () => {
  let root: string;
  let service: ServiceProcess;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'limits-'));
    service = spawnService({
      cwd: root,
      env: { ...(await privateServiceEnv(root)), WORKERS: '1', BODY_LIMIT: '4mb' },
    });
    await waitForHttp(service.url, { service });
  });
  after(async () => {
    await service.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('a form of 180k distinct names is refused at once while the service keeps answering', async () => {
    const flood = Array.from({ length: 180_000 }, (_, index) => `f${index.toString(36)}=`).join('&');
    assert.ok(flood.length > 1_000_000, 'about 1 MiB of field names');
    const started = Date.now();
    const [refused, home] = await Promise.all([
      send(`${service.url}/security/generate-token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: flood,
      }),
      send(`${service.url}/`),
    ]);
    const elapsed = Date.now() - started;
    assert.equal(refused.status, 400);
    assert.match(String(refused.json().error_description ?? refused.json().detail), /at most 256 fields/);
    assert.equal(home.status, 200);
    // Parsed in quadratic time this took minutes; one pass with a field cap takes milliseconds.
    assert.ok(elapsed < 1000, `answered in ${elapsed} ms`);
  });

  test(`a form of ${MAX_FIELDS} fields is still read`, async () => {
    const fields = Array.from({ length: MAX_FIELDS - 3 }, (_, index) => `x${index}=1`);
    const response = await send(`${service.url}/security/generate-token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: ['grant_type=password', 'username=u', 'password=p', ...fields].join('&'),
    });
    assert.equal(response.status, 400);
    assert.equal(response.json().error_description, 'Missing parameter: client_id', 'read, then judged');
  });

  test('a chunked body over the limit is 413, not an aborted upload', async () => {
    const response = await send(`${service.url}/security/generate-token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Transfer-Encoding': 'chunked' },
      body: `grant_type=${'x'.repeat(5 * 1024 * 1024)}`,
    });
    assert.equal(response.status, 413);
  });

  test('a client that hangs up mid-upload is not a server error and leaves no error-log line', async () => {
    const { port } = new URL(service.url);
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          'POST /security/generate-token HTTP/1.1\r\nHost: x\r\n' +
            'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ngrant_type=pass',
        );
        setTimeout(() => socket.resetAndDestroy(), 200);
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    // The worker has seen the reset once it answers the next request on another connection.
    assert.equal((await send(`${service.url}/`)).status, 200);
    const logDir = join(root, 'log');
    const logged = existsSync(logDir)
      ? readdirSync(logDir).filter((name) => name.startsWith('error-log'))
      : [];
    assert.deepEqual(logged, [], 'no error-log file was written');
    assert.ok(!service.lines.some((line) => /aborted|ECONNRESET/.test(line)), service.lines.join('\n'));
  });
});
