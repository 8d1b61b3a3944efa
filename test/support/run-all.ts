/**
 * `npm test`'s test run: every suite with Node's test runner and its spec reporter, one file at
 * a time, then the names of the suites and tests it skipped, and the command that runs them
 * all. The exit status is the runner's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './processes.ts';
import type { Skipped } from './skip-reporter.ts';

const EVERYTHING = 'bash .ci/run';
const dir = mkdtempSync(join(tmpdir(), 'test-run-'));
const skipLog = join(dir, 'skipped.jsonl');
const files = process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts'];

const runner = spawn(
  process.execPath,
  [
    '--test',
    '--test-concurrency=1',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(REPO_ROOT, 'test/support/skip-reporter.ts')}`,
    `--test-reporter-destination=${skipLog}`,
    ...files,
  ],
  { stdio: 'inherit' },
);
// Ctrl-C reaches the runner too (same process group); this process waits for it to end.
process.on('SIGINT', () => {});

runner.once('exit', (code, signal) => {
  const skipped = readSkipped();
  rmSync(dir, { recursive: true, force: true });
  if (skipped.length > 0) console.log(describeSkipped(skipped));
  process.exit(code ?? (signal ? 1 : 0));
});

function readSkipped(): Skipped[] {
  try {
    return readFileSync(skipLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Skipped);
  } catch {
    return [];
  }
}

function describeSkipped(skipped: readonly Skipped[]): string {
  const suites = skipped.filter((entry) => entry.suite).length;
  const lines = skipped.map(
    ({ file, name, reason }) => `  ${file ? relative(REPO_ROOT, file) : '?'}: ${name} (${reason})`,
  );
  return [
    '',
    `Skipped ${suites} suite(s) and ${skipped.length - suites} test(s):`,
    ...lines,
    `To run everything, with private Redis (one server, Sentinel, Cluster) and FerretDB as CI does: ${EVERYTHING}`,
  ].join('\n');
}
