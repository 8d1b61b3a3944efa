import { spawn } from 'node:child_process';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Backend, onPath, startFerretDb } from '../support/backends.ts';

export const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI as a child process, the way an operator does, in `cwd` (so no `.env` of the
 * repository is read and relative output paths land there) with only the given variables.
 */
export function runCli(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number; input?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', ...options.env },
      // Standard input is a pipe when there is input to give, never a TTY.
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cli ${args.join(' ')} did not exit within ${options.timeoutMs ?? 30_000} ms`));
    }, options.timeoutMs ?? 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** A failure is exit code 1 and exactly one line on standard error, nothing on standard output. */
export function isOneLineFailure(result: CliResult): boolean {
  const lines = result.stderr.trim().split('\n');
  return result.code === 1 && lines.length === 1 && lines[0] !== '' && result.stdout === '';
}

/**
 * Runtime settings that stop the service, each invalid: commands that only describe the
 * service (route:list, openapi:generate) read none of them and must not fail on them.
 */
export const BROKEN_RUNTIME: Readonly<Record<string, string>> = {
  PORT: 'abc',
  WORKERS: '0',
  MONGODB_URL: 'not a url',
  REDIS_URL: 'http://wrong-scheme',
  BCRYPT_COST: '1',
  BODY_LIMIT: 'huge',
  ACCESS_TOKEN_ALG: 'none',
  ERROR_REPORT_TOKENS: 'short',
  ERROR_REPORT_IP_WHITELIST: '300.1.1.1/99',
};

/**
 * The MongoDB a suite of commands runs against: MONGODB_URL, or a private FerretDB started
 * for the suite (call inside its `describe`). `skip` says why there is neither.
 */
export function mongoForCommands(suite: string): { base(): string | undefined; skip(): string | false } {
  let base = process.env.MONGODB_URL;
  let ferret: Backend | undefined;
  let skip: string | false = false;
  before(async () => {
    if (base) return;
    if (!onPath('ferretdb')) {
      skip = 'neither MONGODB_URL is set nor ferretdb on PATH';
      console.log(`# ${suite} skipped: ${skip}`);
      return;
    }
    ferret = await startFerretDb();
    base = ferret.url;
  });
  after(async () => {
    await ferret?.dispose();
  });
  return { base: () => base, skip: () => skip };
}
