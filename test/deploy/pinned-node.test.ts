/**
 * The README's commands on a machine whose own Node.js is older than the one the service needs
 * (Debian's is 20): `npm install` brings the pinned Node.js (the `node` package), and npm runs
 * every script on it. Where it is missing, each script says in one line which version it needs.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../support/backends.ts';
import { REPO_ROOT, waitForHttp } from '../support/processes.ts';

const { name, engines } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  engines: { node: string };
};
const neededMajor = Number(/\d+/.exec(engines.node)?.[0]);

/**
 * The PATH a shell on this machine has: the test runs inside an npm script, whose PATH starts
 * with node_modules/.bin directories (npm's own among them), and those are what is under test.
 */
const machinePath = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.split(sep).includes('node_modules'));

/** The first directory on the machine's PATH with a Node.js older than the one needed. */
function findOlderNode(): { dir: string; version: string } | undefined {
  for (const dir of machinePath) {
    try {
      const version = execFileSync(join(dir, 'node'), ['--version'], { encoding: 'utf8' }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1]) < neededMajor) return { dir, version };
    } catch {
      // no node here
    }
  }
  return undefined;
}

const older = findOlderNode();
const skip = older ? false : `no Node.js older than ${neededMajor} on PATH, so nothing to fall back to`;
if (skip) console.log(`# pinned Node.js tests skipped: ${skip}`);

/** What a person whose shell finds the machine's older Node.js first sees. */
function olderNodeEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: [older?.dir ?? '', ...machinePath].join(delimiter),
    HOME: process.env.HOME ?? '',
    ...extra,
  };
}

describe('the pinned Node.js', { skip }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'pinned-node-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('npm start serves with the machine’s older Node.js first on PATH, and SIGTERM to npm stops it', async () => {
    const port = await freePort();
    const child = spawn('npm', ['start'], {
      cwd: REPO_ROOT,
      // Empty backend URLs: the in-memory stores the README promises, whatever a .env says.
      env: olderNodeEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        KEYS_DIR: join(scratch, 'keys'),
        LOG_DIR: join(scratch, 'log'),
        MONGODB_URL: '',
        REDIS_URL: '',
      }),
      // Its own process group, so that a failed test stops npm, the primary and its worker together.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await Promise.race([
        waitForHttp(`http://127.0.0.1:${port}/`, { timeoutMs: 60_000 }),
        exited.then(() => assert.fail(`npm start exited:\n${output}`)),
      ]);
      // What a process manager does: signal the process it started, npm, and nothing else.
      child.kill('SIGTERM');
      await exited;
      assert.match(output, /SIGTERM received/, 'the signal reached the service through npm');
      await assert.rejects(fetch(`http://127.0.0.1:${port}/`), 'nothing answers once npm has exited');
    } finally {
      try {
        process.kill(-(child.pid ?? 0), 'SIGTERM');
      } catch {
        // the whole group has exited already
      }
      await exited;
    }
  });

  /** A copy of what the npm scripts run, without the packages npm install would bring. */
  function project(withNodeModules: boolean): string {
    const dir = mkdtempSync(join(scratch, 'project-'));
    for (const entry of ['package.json', 'scripts', 'src', 'bench']) {
      cpSync(join(REPO_ROOT, entry), join(dir, entry), { recursive: true });
    }
    if (withNodeModules) mkdirSync(join(dir, 'node_modules'));
    return dir;
  }

  const scripts = [['start'], ['test'], ['run', 'cli', '--', '--version'], ['run', 'bench']];

  const found = `${name} needs Node.js ${neededMajor} or newer (found ${older?.version})`;
  for (const [when, withNodeModules, line] of [
    ['before npm install', false, `${found}; run npm install to fetch it`],
    [
      'where npm install could not fetch it',
      true,
      `${found}; npm install did not fetch it for ${process.platform}-${process.arch}, so install it on this machine`,
    ],
  ] as const) {
    test(`without it, every script says in one line which Node.js it needs (${when})`, () => {
      const dir = project(withNodeModules);
      for (const args of scripts) {
        const result = spawnSync('npm', ['--silent', ...args], {
          cwd: dir,
          env: olderNodeEnv(),
          encoding: 'utf8',
          timeout: 60_000,
        });
        // npm's own warnings (about the machine's npm configuration) are not the script's output.
        const lines = `${result.stdout}${result.stderr}`
          .split('\n')
          .filter((text) => text && !text.startsWith('npm warn'));
        assert.equal(result.status, 1, `npm ${args.join(' ')}: ${lines.join('\n')}`);
        assert.deepEqual(lines, [line], `npm ${args.join(' ')}`);
      }
    });
  }
});
