import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { isOneLineFailure, runCli } from './run-cli.ts';

describe('cli token:generate', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-token-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  test('--help describes the command and its argument', async () => {
    const result = await runCli(['token:generate', '--help'], { cwd });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /Usage: token-service token:generate \[options\] <kind>/);
    assert.match(result.stdout, /error-reporting/);
    assert.match(result.stdout, /--alias <alias>/);
  });

  test('error-reporting: prints a new 256-bit token and the ERROR_REPORT_TOKENS line that configures it', async () => {
    const first = await runCli(['token:generate', 'error-reporting', '--alias', 'web'], { cwd });
    const second = await runCli(['token:generate', 'error-reporting'], { cwd });
    assert.equal(first.code, 0, first.stderr);
    const token = first.stdout.split('\n')[0] ?? '';
    assert.match(token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    assert.equal(Buffer.from(token, 'base64url').length * 8, 256);
    assert.notEqual(second.stdout.split('\n')[0], token, 'a new token every time');

    const line = /ERROR_REPORT_TOKENS=(\S+)/.exec(first.stdout)?.[1];
    assert.equal(line, `web:${token}`);
    assert.match(second.stdout, /ERROR_REPORT_TOKENS=default:/);
    // What it prints is what the service accepts.
    const config = loadConfig({ ERROR_REPORT_TOKENS: line }, readPackageInfo());
    assert.equal(config.errorReport.tokens.get('web'), token);
  });

  test('an unknown kind fails with one line', async () => {
    const result = await runCli(['token:generate', 'database'], { cwd });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
    assert.match(result.stderr, /error-reporting/);
  });

  test('an alias that would break ERROR_REPORT_TOKENS fails with one line', async () => {
    for (const alias of ['a:b', 'a,b', '']) {
      const result = await runCli(['token:generate', 'error-reporting', '--alias', alias], { cwd });
      assert.ok(isOneLineFailure(result), JSON.stringify(result));
    }
  });

  test('a missing kind fails with one line', async () => {
    const result = await runCli(['token:generate'], { cwd });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
  });
});
