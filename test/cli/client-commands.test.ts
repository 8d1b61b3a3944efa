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

describe('client commands: refusals before any database', () => {
  const cases: [string, string[], RegExp][] = [
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
    ['client:show without MONGODB_URL', ['client:show', 'spa'], /^error: MONGODB_URL is not set/],
    [
      'client:rotate-secret without MONGODB_URL',
      ['client:rotate-secret', 'm2m'],
      /^error: MONGODB_URL is not set/,
    ],
    [
      'client:retire-secret without MONGODB_URL',
      ['client:retire-secret', 'm2m'],
      /^error: MONGODB_URL is not set/,
    ],
    ['client:delete without a name', ['client:delete'], /^error: missing required argument 'name'/],
    ['client:show without a name', ['client:show'], /^error: missing required argument 'name'/],
    [
      'client:rotate-secret without a name',
      ['client:rotate-secret'],
      /^error: missing required argument 'name'/,
    ],
    [
      'client:retire-secret without a name',
      ['client:retire-secret'],
      /^error: missing required argument 'name'/,
    ],
    ['client:update with nothing to change', ['client:update', 'spa'], /^error: nothing to change/],
    [
      'client:update with redirect URIs and none at once',
      ['client:update', 'spa', '--redirect-uri', SPA_REDIRECT, '--no-redirect-uris'],
      /^error: option '--no-redirect-uris' cannot be used with option '--redirect-uri <uri>'/,
    ],
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
    assert.match(lines[0] ?? '', /^NAME +TYPE +ACCOUNTS +GRANTS +PREVIOUS SECRET UNTIL +REDIRECT URIS$/);
    assert.match(lines[1] ?? '', /^machine +confidential +user +client_credentials +- +-$/);
    assert.match(
      lines[2] ?? '',
      new RegExp(`^spa +public +user +authorization_code,refresh_token +- +${SPA_REDIRECT}$`),
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

  test("the client service's refusals name the options, and nothing is stored", async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const env = { MONGODB_URL: isolatedMongoUrl(base) };
    const m2m = await cli(
      ['client:create', '--name', 'm2m', '--type', 'confidential', '--grant', 'client_credentials'],
      env,
    );
    assert.equal(m2m.code, 0, m2m.stderr);
    const spa = await cli(['client:create', ...SPA, '--grant', 'authorization_code'], env);
    assert.equal(spa.code, 0, spa.stderr);
    const mobile = await cli(
      'client:create --name mobile --type public --grant authorization_code --redirect-uri com.example.app:/oauth2redirect'.split(
        ' ',
      ),
      env,
    );
    assert.equal(mobile.code, 0, mobile.stderr);
    const cases: [string, string[], RegExp][] = [
      [
        'http on localhost',
        'client:create --name a --type public --grant authorization_code --redirect-uri http://localhost:3000/cb'.split(
          ' ',
        ),
        /^error: --redirect-uri: .*use http:\/\/127\.0\.0\.1/,
      ],
      [
        'a private-use scheme of a confidential client',
        'client:update m2m --grant authorization_code --redirect-uri com.example.app:/oauth2redirect'.split(
          ' ',
        ),
        /^error: --redirect-uri: Only a public client may use a private-use scheme/,
      ],
      [
        'a scheme that is no reversed domain name',
        'client:update mobile --redirect-uri myapp:/oauth2redirect'.split(' '),
        /^error: --redirect-uri: .*com\.example\.app:\/oauth2redirect \(RFC 8252 §7\.1\)/,
      ],
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
        /^error: --type: Must be confidential or public/,
      ],
      [
        'another account store',
        'client:create --name a --type public --grant refresh_token --accounts robots'.split(' '),
        /^error: --accounts: Must be user or admin/,
      ],
      ['an unknown grant in an update', 'client:update m2m --grant implicit'.split(' '), /^error: --grant: /],
      [
        'an update a public client cannot have',
        'client:update spa --grant password'.split(' '),
        /^error: --grant: A public client has no secret/,
      ],
      [
        'the code grant left without redirect URIs',
        'client:update spa --no-redirect-uris'.split(' '),
        /^error: --redirect-uri: The authorization_code grant needs at least one/,
      ],
      [
        'an overlap past the longest',
        'client:rotate-secret m2m --overlap 604801'.split(' '),
        /^error: --overlap: Must be a whole number of seconds from 0 to 604800/,
      ],
      [
        'an overlap that is no number',
        'client:rotate-secret m2m --overlap 1h'.split(' '),
        /^error: --overlap: Must be a whole number of seconds from 0 to 604800/,
      ],
      [
        'the secret of a public client',
        'client:rotate-secret spa'.split(' '),
        /^error: client:rotate-secret: A public client has no secret/,
      ],
      [
        'retiring the secret of a public client',
        'client:retire-secret spa'.split(' '),
        /^error: client:retire-secret: A public client has no secret/,
      ],
      ['an unknown client', 'client:rotate-secret nobody'.split(' '), /^error: No such client/],
      [
        'an unknown client to update',
        'client:update nobody --grant password'.split(' '),
        /^error: No such client/,
      ],
    ];
    const before = (await cli(['client:list', '--json'], env)).stdout;
    for (const [name, args, message] of cases) {
      const result = await cli(args, env);
      assert.ok(isOneLineFailure(result), `${name}: ${JSON.stringify(result)}`);
      assert.match(result.stderr, message, name);
    }
    assert.equal((await cli(['client:list', '--json'], env)).stdout, before, 'nothing changed');
  });

  test('show, update, rotate-secret, retire-secret: what /oauth-clients can do, at the command line', async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const env = { MONGODB_URL: isolatedMongoUrl(base) };
    const json = async (args: string[]) => {
      const result = await cli(args, env);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };
    const created = await json(['client:create', ...SPA, '--grant', 'authorization_code']);
    assert.deepEqual(await json(['client:show', 'spa']), created);

    const other = 'https://app.example.test/other';
    const changed = await json([
      'client:update',
      'spa',
      '--redirect-uri',
      other,
      '--redirect-uri',
      SPA_REDIRECT,
    ]);
    assert.deepEqual(changed.redirectUris, [other, SPA_REDIRECT]);
    assert.deepEqual(changed.grants, ['authorization_code'], 'grants not given stay');
    const regranted = await json(['client:update', 'spa', '--grant', 'refresh_token']);
    assert.deepEqual(regranted.grants, ['refresh_token']);
    const cleared = await json(['client:update', 'spa', '--no-redirect-uris']);
    assert.deepEqual(cleared.redirectUris, []);
    assert.deepEqual(await json(['client:show', 'spa']), cleared);

    const machine = await json([
      'client:create',
      '--name',
      'machine',
      '--type',
      'confidential',
      '--grant',
      'client_credentials',
    ]);
    const first = String(machine.secret);
    const before = Date.now();
    const rotated = await json(['client:rotate-secret', 'machine', '--overlap', '600']);
    const second = String(rotated.secret);
    assert.match(second, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(second, first);
    const until = Date.parse(String(rotated.previousSecretExpiresAt));
    assert.ok(until >= before + 600_000 && until <= Date.now() + 600_000);
    const shown = await json(['client:show', 'machine']);
    assert.equal(shown.secret, undefined, 'the secret is printed once');
    assert.equal(shown.previousSecretExpiresAt, rotated.previousSecretExpiresAt);
    const table = await cli(['client:list'], env);
    assert.match(
      table.stdout,
      new RegExp(
        `^machine +confidential +user +client_credentials +${shown.previousSecretExpiresAt} +-$`,
        'm',
      ),
    );
    assert.ok(![first, second].some((secret) => table.stdout.includes(secret)));

    const server = await startTestServer({ env });
    try {
      const accepts = async (secret: string) =>
        (
          await request(server.url, 'POST', '/security/generate-token', {
            form: {
              grant_type: 'client_credentials',
              scope: 'api',
              client_id: 'machine',
              client_secret: secret,
            },
          })
        ).status === 200;
      assert.equal(await accepts(first), true, 'the secret before the rotation, during the overlap');
      assert.equal(await accepts(second), true);

      const retired = await json(['client:retire-secret', 'machine']);
      assert.equal(retired.previousSecretExpiresAt, null);
      assert.equal(retired.secret, undefined);
      assert.equal(await accepts(first), false);
      assert.equal(await accepts(second), true);

      const defaulted = await json(['client:rotate-secret', 'machine']);
      const byDefault =
        Date.parse(String(defaulted.previousSecretExpiresAt)) - Date.parse(String(defaulted.updatedAt));
      assert.equal(byDefault, 24 * 60 * 60 * 1000, 'a day unless --overlap says otherwise');
      const now = await json(['client:rotate-secret', 'machine', '--overlap', '0']);
      assert.equal(now.previousSecretExpiresAt, null);
      assert.equal(await accepts(String(defaulted.secret)), false, '--overlap 0: the one before stops now');
      assert.equal(await accepts(String(now.secret)), true);
    } finally {
      await server.close();
    }
  });

  test('the last client that signs administrators in keeps its sign-in grants at the command line too', async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const env = { MONGODB_URL: isolatedMongoUrl(base) };
    assert.equal((await cli(['seed'], env)).code, 0);
    const narrowed = await cli(['client:update', 'admin', '--grant', 'client_credentials'], env);
    assert.ok(isOneLineFailure(narrowed), JSON.stringify(narrowed));
    assert.match(
      narrowed.stderr,
      /^error: The last client that signs administrators in cannot be deleted or lose that grant/,
    );
    const shown = JSON.parse((await cli(['client:show', 'admin'], env)).stdout) as { grants: string[] };
    assert.deepEqual(shown.grants, ['password', 'refresh_token', 'client_credentials']);

    const console = await cli(
      [
        'client:create',
        '--name',
        'console',
        '--type',
        'confidential',
        '--accounts',
        'admin',
        '--grant',
        'password',
      ],
      env,
    );
    assert.equal(console.code, 0, console.stderr);
    const allowed = await cli(['client:update', 'admin', '--grant', 'client_credentials'], env);
    assert.equal(allowed.code, 0, allowed.stderr);
    const last = await cli(['client:update', 'console', '--grant', 'client_credentials'], env);
    assert.match(last.stderr, /^error: The last client that signs administrators in/);
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
