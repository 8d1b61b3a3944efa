/**
 * docs/operations.md, "Replace the seeded secrets", step by step, as an operator follows it
 * against a running service (the real entry point, NODE_ENV=production, MongoDB and Redis):
 * rotate each seeded client's secret with an overlap at the command line, roll the new one
 * out, retire the old one. Nobody is refused on the way: the old secret works during the
 * overlap and the new one throughout, tokens issued with the old one keep working, and the
 * start warns while a publicly known secret is still accepted.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Backend,
  realServersMissing,
  startFerretDb,
  startRedis,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import {
  ADMIN_CLIENT,
  decodeJwtPart,
  FRONTEND_CLIENT,
  request,
  SEEDED_ADMIN,
  SEEDED_USER,
} from '../support/http.ts';
import { privateServiceEnv, type ServiceProcess, spawnService, waitForHttp } from '../support/processes.ts';
import { type CliResult, runCli } from './run-cli.ts';

const skip = realServersMissing('the procedure that replaces the seeded secrets');

/** The seeded clients, their publicly known secrets, and the accounts each signs in. */
const SEEDED = [
  { client: FRONTEND_CLIENT, account: SEEDED_USER },
  { client: ADMIN_CLIENT, account: SEEDED_ADMIN },
] as const;

describe('replace the seeded secrets without an outage', { skip }, () => {
  const owned: Backend[] = [];
  let root: string;
  let env: Record<string, string>;
  let service: ServiceProcess | undefined;

  /** The backends of the run (those of CI when set), each database the test's own. */
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'replace-secrets-'));
    const own = async (start: () => Promise<Backend>) => {
      const backend = await start();
      owned.push(backend);
      return backend.url;
    };
    const redisUrl = process.env.REDIS_URL ?? (await own(startRedis));
    const mongodbUrl = process.env.MONGODB_URL ?? (await own(startFerretDb));
    env = {
      ...(await privateServiceEnv(root)),
      NODE_ENV: 'production',
      WORKERS: '1',
      MONGODB_URL: withDatabase(mongodbUrl, uniqueName('replace')),
      REDIS_URL: redisUrl,
    };
  });

  after(async () => {
    await service?.stop();
    await Promise.all(owned.map((backend) => backend.dispose()));
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** (Re)starts the service and returns the publicly known defaults its start warned about. */
  async function start(): Promise<string[]> {
    await service?.stop();
    service = spawnService({ cwd: root, env });
    await waitForHttp(service.url, { service });
    const started = service;
    await started.waitForRecord((record) => String(record.msg).startsWith('All 1 worker(s) serving'));
    const [entry] = started.records().filter((record) => Array.isArray(record.notForProduction));
    return ((entry?.notForProduction ?? []) as string[]).filter((found) => found.startsWith('client'));
  }

  /** An operator's command, with the service's MONGODB_URL and REDIS_URL as `docker compose run` gives. */
  async function cli(args: string[]): Promise<CliResult> {
    const result = await runCli(args, {
      cwd: root,
      env: { MONGODB_URL: env.MONGODB_URL ?? '', REDIS_URL: env.REDIS_URL ?? '', BCRYPT_COST: '4' },
    });
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  }

  function signIn(client: { client_id: string; client_secret: string }, account: object) {
    return request(service?.url ?? '', 'POST', '/security/generate-token', {
      json: { grant_type: 'password', scope: 'api', ...client, ...account },
    });
  }

  test('rotate with overlap, roll out, retire: the old secret works until retired, the new one throughout', async () => {
    const warned = await start();
    for (const { client } of SEEDED)
      assert.ok(
        warned.some((message) => message.includes(`client "${client.client_id}" has its default secret`)),
        warned.join('\n'),
      );
    // What the running copies of each client hold before the procedure: tokens issued with the old secret.
    const issued = await Promise.all(
      SEEDED.map(async ({ client, account }) => {
        const login = await signIn(client, account);
        assert.equal(login.status, 200, JSON.stringify(login.body));
        return login.body;
      }),
    );

    // Step 1: rotate each client's secret with an overlap; the new one is printed once.
    const renewed: { client_id: string; client_secret: string }[] = [];
    for (const { client, account } of SEEDED) {
      const rotated = JSON.parse(
        (await cli(['client:rotate-secret', client.client_id, '--overlap', '3600'])).stdout,
      );
      assert.ok(Date.parse(rotated.previousSecretExpiresAt) > Date.now() + 3_500_000);
      const fresh = { client_id: client.client_id, client_secret: String(rotated.secret) };
      renewed.push(fresh);
      // During the overlap: copies not yet rolled out, and those already rolled out.
      assert.equal((await signIn(client, account)).status, 200, 'the old secret during the overlap');
      assert.equal((await signIn(fresh, account)).status, 200, 'the new secret at once');
    }

    // Step 2: the new secrets are rolled out (here: a restart), while the old ones are still
    // accepted, which the start names.
    const during = await start();
    for (const { client } of SEEDED)
      assert.ok(
        during.some((message) =>
          message.includes(
            `client "${client.client_id}" still accepts its default secret, as the one before a rotation, until`,
          ),
        ),
        during.join('\n'),
      );
    for (const [index, { client, account }] of SEEDED.entries()) {
      assert.equal((await signIn(client, account)).status, 200);
      assert.equal((await signIn(renewed[index] ?? client, account)).status, 200);
      const shown = JSON.parse((await cli(['client:show', client.client_id])).stdout);
      assert.notEqual(shown.previousSecretExpiresAt, null, 'client:show says until when the old one works');
    }

    // Step 3: retire the old secrets once every copy has the new one.
    for (const [index, { client, account }] of SEEDED.entries()) {
      const retired = JSON.parse((await cli(['client:retire-secret', client.client_id])).stdout);
      assert.equal(retired.previousSecretExpiresAt, null);
      await eventually(async () => (await signIn(client, account)).status === 401, 'the old secret refused');
      const fresh = renewed[index] ?? client;
      assert.equal((await signIn(fresh, account)).status, 200, 'the new secret after the retirement');
      // Tokens issued with the old secret: the access token reads, the refresh token refreshes
      // (with the new secret, as the client now authenticates).
      const tokens = issued[index] ?? {};
      const refreshed = await request(service?.url ?? '', 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token), ...fresh },
      });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      const access = String(tokens.access_token);
      const kind = client.client_id === 'admin' ? 'admins' : 'users';
      const own = await request(
        service?.url ?? '',
        'GET',
        `/${kind}/${String(decodeJwtPart(access, 1).sub)}`,
        {
          token: access,
        },
      );
      assert.equal(own.status, 200, 'the access token issued with the old secret');
    }

    assert.deepEqual(await start(), [], 'no publicly known client secret is accepted any more');
  });
});
