import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  CONFIGURATION_DOCUMENT,
  configurationDocument,
  ENV_EXAMPLE,
  envExample,
} from '../../src/cli/commands/config-docs.ts';
import { loadConfig } from '../../src/config/load.ts';
import type { Setting } from '../../src/config/setting.ts';
import { SETTINGS } from '../../src/config/settings.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { runCli } from './run-cli.ts';

const REPOSITORY = new URL('../../', import.meta.url);
const inRepository = (file: string) => readFileSync(new URL(file, REPOSITORY), 'utf8');
const STALE = 'is stale: run `npm run cli -- config:docs` and commit the result';

describe('config:docs', () => {
  test(`${CONFIGURATION_DOCUMENT} is what the table of settings says`, () => {
    assert.equal(
      inRepository(CONFIGURATION_DOCUMENT),
      configurationDocument(),
      `${CONFIGURATION_DOCUMENT} ${STALE}`,
    );
  });

  test(`${ENV_EXAMPLE} is what the table of settings says`, () => {
    assert.equal(inRepository(ENV_EXAMPLE), envExample(), `${ENV_EXAMPLE} ${STALE}`);
  });

  test('writes both files where it is told', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'config-docs-'));
    const result = await runCli(['config:docs', '--docs', 'out/config.md', '--env-example', 'env'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(readFileSync(join(cwd, 'out/config.md'), 'utf8'), configurationDocument());
    assert.equal(readFileSync(join(cwd, 'env'), 'utf8'), envExample());
  });

  test(`${ENV_EXAMPLE} names every setting, applying only those the deployment sets`, () => {
    const lines = envExample().split('\n');
    for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
      const assignment = lines.filter((line) => line.replace(/^# /, '').startsWith(`${name}=`));
      assert.equal(assignment.length, 1, `${name} is named once`);
      assert.equal(
        assignment[0]?.startsWith('#'),
        setting.envFile !== 'set',
        `${name} is set or commented out`,
      );
    }
  });

  test('every setting says what leaving it unset means', () => {
    for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
      assert.ok(setting.default || setting.unset, `${name} has neither a default nor an unset text`);
    }
  });

  test('every example the documentation and .env.example show is accepted', () => {
    for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
      if (setting.example === undefined) continue;
      assert.doesNotThrow(() => loadConfig({ [name]: setting.example }, readPackageInfo()), name);
    }
  });
});
