import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { routeTable } from '../../src/http/routes/index.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { BROKEN_RUNTIME, isOneLineFailure, runCli } from './run-cli.ts';

describe('cli route:list', () => {
  let cwd: string;
  let server: TestServer;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-routes-'));
    server = await startTestServer();
  });
  after(async () => {
    await server.close();
    await rm(cwd, { recursive: true, force: true });
  });

  test('--help', async () => {
    const result = await runCli(['route:list', '--help'], { cwd });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /Usage: token-service route:list \[options\]/);
    assert.match(result.stdout, /--json/);
    for (const option of ['--method <method>', '--path <text>', '--name <text>']) {
      assert.ok(result.stdout.includes(option), option);
    }
    assert.match(result.stdout, /every one given must match/);
  });

  test('--method, --path and --name filter the rows, combined', async () => {
    const listed = async (...filters: string[]) => {
      const result = await runCli(['route:list', '--json', ...filters], { cwd });
      assert.equal(result.code, 0, result.stderr);
      return (JSON.parse(result.stdout) as { method: string; path: string; name: string }[]).map(
        (row) => `${row.method} ${row.path} ${row.name}`,
      );
    };
    const all = server.app.routes.map((route) => `${route.method} ${route.path} ${route.name}`);
    const expect = (keep: (route: AnyRoute) => boolean) =>
      server.app.routes.filter(keep).map((route) => `${route.method} ${route.path} ${route.name}`);

    // The method exactly, in any case; path and name as substrings.
    assert.deepEqual(
      await listed('--method', 'get'),
      expect((route) => route.method === 'GET'),
    );
    assert.ok(!(await listed('--method', 'P')).length, 'not a substring of POST, PUT or PATCH');
    assert.deepEqual(
      await listed('--path', '/admins'),
      expect((route) => route.path.startsWith('/admins')),
    );
    assert.deepEqual(
      await listed('--name', 'user::'),
      expect((route) => route.name.startsWith('user::')),
    );
    const combined = await listed('--method', 'GET', '--path', '/users', '--name', 'user::');
    assert.deepEqual(
      combined,
      expect(
        (route) => route.method === 'GET' && route.path.includes('/users') && route.name.includes('user::'),
      ),
    );
    assert.ok(combined.includes('GET /users user::list') && combined.includes('GET /users/:id user::view'));
    assert.ok(!combined.some((row) => row.startsWith('POST')));
    // A parameter as the documents write it reads as the table does.
    assert.deepEqual(
      await listed('--method', 'DELETE', '--path', '/users/{id}'),
      expect((route) => route.method === 'DELETE' && route.path.includes('/users/:id')),
    );
    assert.ok((await listed('--path', '/users/{id}')).includes('PATCH /users/:id user::update'));
    // Case-sensitive, as paths are; nothing matching is an empty list, not an error.
    assert.deepEqual(await listed('--path', '/USERS'), []);
    assert.deepEqual(await listed('--name', 'no-such-route'), []);
    assert.deepEqual(await listed(), all);

    const table = await runCli(['route:list', '--name', 'admin::list'], { cwd });
    assert.equal(table.code, 0, table.stderr);
    const [header, ...lines] = table.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^METHOD\s+PATH\s+NAME/);
    assert.deepEqual(
      lines.map((line) => line.split(/\s+/).slice(0, 3).join(' ')),
      ['GET /admins admin::list'],
    );
  });

  test('lists every route of the running service: method, path, name, permission, deprecation', async () => {
    const result = await runCli(['route:list'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    const [header, ...lines] = result.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^METHOD\s+PATH\s+NAME\s+PERMISSION\s+DEPRECATION$/);
    assert.equal(lines.length, server.app.routes.length);
    for (const route of server.app.routes) {
      const permission = route.permission === 'public' ? 'public' : route.permission.join(',');
      const line = lines.find((candidate) => candidate.split(/\s+/)[2] === route.name);
      assert.ok(line, route.name);
      assert.deepEqual(line.split(/\s+/).slice(0, 4), [route.method, route.path, route.name, permission]);
    }
    assert.match(
      lines.find((line) => line.split(/\s+/)[2] === 'home') ?? '',
      /since 2025-01-01, sunset 2099-12-31$/,
    );
  });

  test('--json gives the same rows as data', async () => {
    const result = await runCli(['route:list', '--json'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    const rows = JSON.parse(result.stdout) as {
      method: string;
      path: string;
      name: string;
      deprecation: string;
    }[];
    assert.deepEqual(
      rows.map((row) => `${row.method} ${row.path} ${row.name}`),
      server.app.routes.map((route) => `${route.method} ${route.path} ${route.name}`),
    );
    assert.equal(rows.find((row) => row.name === 'security::generate-token')?.deprecation, '-');
  });

  test('the table route:list reads is the table the service runs: one source of truth', () => {
    const offline = routeTable(loadConfig({}, readPackageInfo()).grants);
    const facts = (routes: readonly AnyRoute[]) =>
      routes.map((route) => ({
        method: route.method,
        path: route.path,
        name: route.name,
        permission: route.permission,
        summary: route.summary,
        tags: route.tags,
        body: route.body,
        responses: Object.keys(route.responses),
      }));
    assert.deepEqual(facts(offline), facts(server.app.routes));
  });

  test('an invalid configuration of what it lists fails with one line naming the variable', async () => {
    const deprecations = join(cwd, 'bad-deprecation.json');
    writeFileSync(
      deprecations,
      JSON.stringify({ deprecations: { home: { since: 'soon', sunset: 'later', link: '/' } } }),
    );
    for (const [env, variable] of [
      [{ APP_URL: 'ftp://example.com' }, /APP_URL/],
      [{ CONFIG_FILE: deprecations }, /CONFIG_FILE deprecations\.home/],
      [{ CONFIG_FILE: join(cwd, 'missing.json') }, /CONFIG_FILE/],
    ] as const) {
      const result = await runCli(['route:list'], { cwd, env });
      assert.ok(isOneLineFailure(result), JSON.stringify(result));
      assert.match(result.stderr, variable);
    }
  });

  test('a runtime configuration it does not read, however wrong, does not stop it', async () => {
    const headers = join(cwd, 'bad-headers.json');
    writeFileSync(headers, JSON.stringify({ responseHeaders: { '*': { 'Bad Name': 'x' } } }));
    const result = await runCli(['route:list', '--json'], {
      cwd,
      env: { ...BROKEN_RUNTIME, CONFIG_FILE: headers },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.equal((JSON.parse(result.stdout) as unknown[]).length, server.app.routes.length);
  });
});
