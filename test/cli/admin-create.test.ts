import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { ADMIN_CLIENT, passwordGrant, request } from '../support/http.ts';
import { isolatedMongoUrl, startTestServer } from '../support/server.ts';
import { type CliResult, isOneLineFailure, mongoForCommands, runCli } from './run-cli.ts';

/** Runs `admin:create` as an operator would, with `input` on standard input (a pipe, not a TTY). */
function adminCreate(args: string[], input: string, env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(['admin:create', ...args], {
    cwd: tmpdir(),
    env: { BCRYPT_COST: '4', BACKEND_STARTUP_TIMEOUT: '10', ...env },
    input,
  });
}

const PASSWORD = 'a long operator password';

describe('admin:create: refusals (no database needed)', () => {
  const cases: [string, string[], string, RegExp][] = [
    ['a short password', ['--identity', 'ops'], 'short\n', /^error: password: Must be 8 to 1024/],
    ['an empty standard input', ['--identity', 'ops'], '', /^error: no password was given/],
    ['an empty first line', ['--identity', 'ops'], `\n${PASSWORD}\n`, /^error: no password was given/],
    [
      'the identity as password',
      ['--identity', 'operator1'],
      'operator1\n',
      /^error: password: Must not be the same/,
    ],
    ['an invalid identity', ['--identity', 'has space'], `${PASSWORD}\n`, /^error: --identity: /],
    [
      'a name that is too long',
      ['--identity', 'ops', '--last-name', 'x'.repeat(101)],
      `${PASSWORD}\n`,
      /^error: --last-name: /,
    ],
    [
      'an unknown role',
      ['--identity', 'ops', '--role', 'root'],
      `${PASSWORD}\n`,
      /^error: option '--role <role>' argument 'root' is invalid/,
    ],
    [
      'a password given as an argument',
      ['--identity', 'ops', '--password', PASSWORD],
      '',
      /^error: unknown option '--password'/,
    ],
    ['no identity', [], `${PASSWORD}\n`, /^error: required option '--identity <name>' not specified/],
    ['no MONGODB_URL', ['--identity', 'ops'], `${PASSWORD}\n`, /^error: MONGODB_URL is not set/],
  ];
  for (const [name, args, input, message] of cases) {
    test(`${name}: exit 1 with one line on stderr`, async () => {
      const result = await adminCreate(args, input);
      assert.ok(isOneLineFailure(result), JSON.stringify(result));
      assert.match(result.stderr, message);
      assert.ok(!result.stderr.includes(PASSWORD), 'the password is never echoed');
    });
  }

  test('--help names the options and says where the password comes from', async () => {
    const result = await adminCreate(['--help'], '');
    assert.equal(result.code, 0);
    for (const text of ['--identity', '--first-name', '--last-name', '--role', 'standard input']) {
      assert.ok(result.stdout.includes(text), text);
    }
  });
});

describe('admin:create against MongoDB', () => {
  const mongo = mongoForCommands('admin:create against MongoDB');

  test('creates an admin that can then sign in; the same identity again is a one-line error', async (t) => {
    const base = mongo.base();
    if (mongo.skip() || !base) return t.skip(String(mongo.skip()));
    const mongodbUrl = isolatedMongoUrl(base);
    const created = await adminCreate(
      ['--identity', 'night.ops', '--first-name', 'Night', '--role', 'superuser'],
      `${PASSWORD}\n`,
      { MONGODB_URL: mongodbUrl },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/);
    assert.equal(created.stderr, '');

    const duplicate = await adminCreate(['--identity', 'night.ops'], `${PASSWORD}\n`, {
      MONGODB_URL: mongodbUrl,
    });
    assert.ok(isOneLineFailure(duplicate), JSON.stringify(duplicate));
    assert.match(duplicate.stderr, /^error: An account with identity "night\.ops" already exists/);

    // A service over the same database (refresh tokens in memory) accepts the new credentials.
    const server = await startTestServer({ env: { MONGODB_URL: mongodbUrl } });
    try {
      const tokens = await passwordGrant(server.url, ADMIN_CLIENT, {
        username: 'night.ops',
        password: PASSWORD,
      });
      const own = await request(server.url, 'GET', '/admins/my-account', { token: tokens.access_token });
      assert.equal(own.status, 200);
      assert.equal(own.body.id, created.stdout.trim());
      assert.deepEqual(own.body.roles, ['superuser']);
      assert.equal(own.body.firstName, 'Night');
    } finally {
      await server.close();
    }
  });
});
