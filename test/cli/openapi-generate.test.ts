import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { parse } from 'yaml';
import { BROKEN_RUNTIME, isOneLineFailure, runCli } from './run-cli.ts';

describe('cli openapi:generate', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-openapi-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  test('--help names the default output', async () => {
    const result = await runCli(['openapi:generate', '--help'], { cwd });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /--output <file>/);
    assert.match(result.stdout, /public\/openapi\.yaml/);
  });

  test('writes a valid public/openapi.yaml by default, servers[0] being APP_URL', async () => {
    const result = await runCli(['openapi:generate'], { cwd, env: { APP_URL: 'https://api.example.org/' } });
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /^Wrote public\/openapi\.yaml: \d+ operations, server https:\/\/api\.example\.org\n$/,
    );
    const text = readFileSync(join(cwd, 'public', 'openapi.yaml'), 'utf8');
    const document = parse(text) as { servers: { url: string }[] };
    assert.equal(document.servers[0]?.url, 'https://api.example.org');
    assert.deepEqual(await new Validator().validate(text), { valid: true });
    assert.deepEqual(readdirSync(join(cwd, 'public')), ['openapi.yaml'], 'no temporary file left behind');
  });

  test('--output chooses the file; a .json name writes JSON', async () => {
    const result = await runCli(['openapi:generate', '--output', 'docs/api/openapi.json'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(readFileSync(join(cwd, 'docs', 'api', 'openapi.json'), 'utf8'));
    assert.equal(document.servers[0].url, 'http://localhost:8080');
    assert.deepEqual(await new Validator().validate(document), { valid: true });
  });

  test('an output that cannot be written fails with one line', async () => {
    writeFileSync(join(cwd, 'a-file'), '');
    const result = await runCli(['openapi:generate', '--output', 'a-file/openapi.yaml'], { cwd });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
    assert.equal(existsSync(join(cwd, 'a-file', 'openapi.yaml')), false);
  });

  test('a runtime configuration it does not read, however wrong, does not stop it', async () => {
    const result = await runCli(['openapi:generate', '--output', 'runtime/openapi.json'], {
      cwd,
      env: { ...BROKEN_RUNTIME, APP_URL: 'https://api.example.org', OAUTH_GRANTS: 'client_credentials' },
    });
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(readFileSync(join(cwd, 'runtime', 'openapi.json'), 'utf8'));
    assert.equal(document.servers[0].url, 'https://api.example.org');
    assert.deepEqual(Object.keys(document.components.securitySchemes.oauth2.flows), ['clientCredentials']);
  });

  test('an invalid configuration of what it describes fails with one line', async () => {
    const result = await runCli(['openapi:generate'], { cwd, env: { OAUTH_GRANTS: 'implicit' } });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
    assert.match(result.stderr, /OAUTH_GRANTS/);
  });
});
