import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { authorizationCode, exchangeCode, pkce, SPA_REDIRECT } from '../support/authorization.ts';
import { request, SEEDED_USER } from '../support/http.ts';
import { isolatedMongoUrl, startTestServer } from '../support/server.ts';
import { openTestStores } from '../support/stores.ts';
import { type CliResult, isOneLineFailure, mongoForCommands, runCli } from './run-cli.ts';

function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, { cwd: tmpdir(), env: { BCRYPT_COST: '4', BACKEND_STARTUP_TIMEOUT: '10', ...env } });
}

const SPA = ['--name', 'spa', '--type', 'public', '--redirect-uri', SPA_REDIRECT];

describe('client commands: refusals (no database needed)', () => {
  const cases: [string, string[], RegExp][] = [
    [
      'a name with a space',
      ['client:create', '--name', 'my app', '--type', 'public', '--grant', 'refresh_token'],
      /^error: --name: /,
    ],
    [
      'an unknown grant',
      'client:create --name a --type public --grant implicit'.split(' '),
      /^error: --grant: /,
    ],
    [
      'an unknown type',
      'client:create --name a --type trusted --grant password'.split(' '),
      /^error: option '--type <type>' argument 'trusted' is invalid/,
    ],
    [
      'no grant',
      'client:create --name a --type public'.split(' '),
      /^error: required option '--grant <grant>' not specified/,
    ],
    [
      'client:create without MONGODB_URL',
      ['client:create', ...SPA, '--grant', 'authorization_code'],
      /^error: MONGODB_URL is not set/,
    ],
    ['client:list without MONGODB_URL', ['client:list'], /^error: MONGODB_URL is not set/],
    ['client:delete without a name', ['client:delete'], /^error: missing required argument 'name'/],
  ];
  for (const [name, args, message] of cases) {
    test(`${name}: exit 1 with one line on stderr`, async () => {
      const result = await cli(args);
      assert.ok(isOneLineFailure(result), JSON.stringify(result));
      assert.match(result.stderr, message);
    });
  }
});

describe('client commands against MongoDB', () => {
  const mongo = mongoForCommands('client commands against MongoDB');

  test('create, list, use through the service, delete', async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const env = { MONGODB_URL: isolatedMongoUrl(base) };

    const spa = await cli(
      ['client:create', ...SPA, '--grant', 'authorization_code', '--grant', 'refresh_token'],
      env,
    );
    assert.equal(spa.code, 0, spa.stderr);
    const created = JSON.parse(spa.stdout) as Record<string, unknown>;
    assert.deepEqual(
      { ...created, createdAt: 0, updatedAt: 0 },
      {
        name: 'spa',
        type: 'public',
        accounts: 'user',
        grants: ['authorization_code', 'refresh_token'],
        redirectUris: [SPA_REDIRECT],
        previousSecretExpiresAt: null,
        createdAt: 0,
        updatedAt: 0,
      },
    );

    const machine = await cli(
      ['client:create', '--name', 'machine', '--type', 'confidential', '--grant', 'client_credentials'],
      env,
    );
    assert.equal(machine.code, 0, machine.stderr);
    const secret = String((JSON.parse(machine.stdout) as { secret: string }).secret);
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);

    const again = await cli(
      ['client:create', '--name', 'machine', '--type', 'public', '--grant', 'refresh_token'],
      env,
    );
    assert.ok(isOneLineFailure(again), JSON.stringify(again));
    assert.match(again.stderr, /^error: A client named "machine" already exists/);
    const inconsistent = await cli(
      ['client:create', '--name', 'web', '--type', 'public', '--grant', 'authorization_code'],
      env,
    );
    assert.ok(isOneLineFailure(inconsistent), JSON.stringify(inconsistent));
    assert.match(
      inconsistent.stderr,
      /^error: --redirect-uri: The authorization_code grant needs at least one/,
    );
    const badUri = await cli(
      [
        'client:create',
        '--name',
        'web',
        '--type',
        'public',
        '--grant',
        'authorization_code',
        '--redirect-uri',
        'http://app.example.test/cb',
      ],
      env,
    );
    assert.match(badUri.stderr, /^error: --redirect-uri: Must be https/);

    const table = await cli(['client:list'], env);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trim().split('\n');
    assert.match(lines[0] ?? '', /^NAME +TYPE +ACCOUNTS +GRANTS +REDIRECT URIS$/);
    assert.match(lines[1] ?? '', /^machine +confidential +user +client_credentials +-$/);
    assert.match(
      lines[2] ?? '',
      new RegExp(`^spa +public +user +authorization_code,refresh_token +${SPA_REDIRECT}$`),
    );
    assert.ok(!table.stdout.includes(secret), 'the secret is never listed');
    const json = JSON.parse((await cli(['client:list', '--json'], env)).stdout) as { name: string }[];
    assert.deepEqual(
      json.map((client) => client.name),
      ['machine', 'spa'],
    );

    // A service over the same database signs in through the client the command made.
    const server = await startTestServer({ env });
    try {
      const { verifier, challenge } = pkce();
      const code = await authorizationCode(server.url, 'spa', challenge, SEEDED_USER);
      const tokens = await exchangeCode(server.url, { client_id: 'spa', code, code_verifier: verifier });
      assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
      const machineTokens = await request(server.url, 'POST', '/security/generate-token', {
        form: { grant_type: 'client_credentials', scope: 'api', client_id: 'machine', client_secret: secret },
      });
      assert.equal(machineTokens.status, 200);

      const deleted = await cli(['client:delete', 'spa'], env);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(deleted.stdout, 'Deleted client spa\n');
      const refreshed = await request(server.url, 'POST', '/security/refresh-token', {
        form: {
          grant_type: 'refresh_token',
          client_id: 'spa',
          refresh_token: String(tokens.body.refresh_token),
        },
      });
      assert.equal(refreshed.body.error, 'invalid_client');
    } finally {
      await server.close();
    }
    const missing = await cli(['client:delete', 'spa'], env);
    assert.ok(isOneLineFailure(missing), JSON.stringify(missing));
    assert.match(missing.stderr, /^error: No such client/);
  });

  test('while the nodes cache, a command that writes needs REDIS_URL; one that reads does not', async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const env = { MONGODB_URL: isolatedMongoUrl(base) };
    const stores = await openTestStores({ mongodbUrl: env.MONGODB_URL });
    const m2m = (name: string) =>
      cli(['client:create', '--name', name, '--type', 'confidential', '--grant', 'client_credentials'], env);
    try {
      // Nodes that last said they cache six minutes ago are gone (REDIS_URL was dropped, say).
      await stores.cachingNodes.announce(new Date(Date.now() - 6 * 60_000));
      assert.equal((await m2m('before')).code, 0);

      // As a node with both backends says at its start and every minute after.
      await stores.cachingNodes.announce(new Date());
      const refused = await m2m('m2m');
      assert.ok(isOneLineFailure(refused), JSON.stringify(refused));
      assert.match(
        refused.stderr,
        /^error: REDIS_URL is not set, but the service's nodes keep accounts and clients in memory/,
      );
      assert.equal(await stores.clients.findByName('m2m'), null);
      for (const write of [['client:delete', 'before'], ['seed']]) {
        assert.ok(isOneLineFailure(await cli(write, env)), write.join(' '));
      }
      assert.ok(await stores.clients.findByName('before'));
      const listed = await cli(['client:list'], env);
      assert.equal(listed.code, 0, listed.stderr);
    } finally {
      await stores.close();
    }
  });
});
