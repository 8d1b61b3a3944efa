/**
 * Helpers for tests that run the service the way an operator does: the real entry point
 * (`node src/main.ts`) as a child process, nginx in front of it, and plain HTTP(S) requests
 * that each open a connection of their own.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { type Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './backends.ts';
import { decodeJwtPart, FRONTEND_CLIENT, SEEDED_USER } from './http.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const ENTRY_POINT = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  /** Every line the process (primary and workers) wrote to stdout or stderr so far. */
  lines: string[];
  /** The stdout lines that parsed as JSON log records. */
  records(): Record<string, unknown>[];
  /** Resolves with the first log record for which `match` is true (also one already written). */
  waitForRecord(match: (record: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<void>;
  /** The pids of the cluster workers this primary has right now. */
  workerPids(): number[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL if it has not exited within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test that fails half-way must not leave services behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Spawns the entry point with exactly `env` (plus PATH), so nothing of the test runner's own
 * environment leaks in: no MONGODB_URL from CI unless the test passes one. The working
 * directory is `cwd` (a temp dir), so a developer's `.env` is not read either.
 */
export function spawnService(options: { env: Record<string, string>; cwd: string }): ServiceProcess {
  const child = spawn(process.execPath, [ENTRY_POINT], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const collect = (stream: NodeJS.ReadableStream | null) => {
    let rest = '';
    stream?.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString('utf8')).split('\n');
      rest = parts.pop() ?? '';
      lines.push(...parts.filter(Boolean));
      for (const waiter of waiters) waiter();
    });
  };
  collect(child.stdout);
  collect(child.stderr);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
      for (const waiter of waiters) waiter();
    });
  });
  const records = () =>
    lines.flatMap((line) => {
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed === 'object' && parsed !== null ? [parsed as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  const pid = child.pid ?? 0;
  return {
    child,
    pid,
    url: `http://127.0.0.1:${options.env.PORT}`,
    lines,
    records,
    exited,
    workerPids: () => childPids(pid),
    waitForRecord(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (records().some(match)) {
            finish();
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish();
            reject(new Error(`Service exited while waiting for a log record:\n${lines.join('\n')}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`No matching log record within ${timeoutMs} ms:\n${lines.join('\n')}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(timeoutMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * What every spawned service of a test needs: loopback on a free port, and its keys and logs
 * in `root`, a directory of the test's own; bcrypt at its cheapest cost.
 */
export async function privateServiceEnv(root: string): Promise<Record<string, string>> {
  return {
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    KEYS_DIR: join(root, 'keys'),
    LOG_DIR: join(root, 'log'),
    BCRYPT_COST: '4',
  };
}

/** Direct children of `pid`, read from /proc (Linux). */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) children.push(Number(entry));
    } catch {
      // the process went away while we looked
    }
  }
  return children.sort((a, b) => a - b);
}

/** Polls `GET url` until it answers 200 (the service is ready), or throws after `timeoutMs`. */
export async function waitForHttp(
  url: string,
  options: { timeoutMs?: number; ca?: string; service?: ServiceProcess } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last = '';
  for (;;) {
    if (options.service && options.service.child.exitCode !== null) {
      throw new Error(`Service exited before it was ready:\n${options.service.lines.join('\n')}`);
    }
    try {
      const response = await send(url, { ca: options.ca });
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready within the time limit (${last})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json(): Record<string, unknown>;
}

/**
 * One request on a connection of its own (no keep-alive pool), over HTTP or HTTPS. A new
 * connection per request is what lets a cluster's primary deal requests out to different
 * workers; `ca` is the certificate an HTTPS server must present. With `agent`, the request
 * takes a connection from that agent's pool instead, as a client that keeps connections does.
 */
export function send(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    json?: unknown;
    body?: string | Buffer;
    token?: string;
    ca?: string;
    timeoutMs?: number;
    agent?: Agent;
  } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['Content-Type'] = 'application/json';
  }
  if (body !== undefined && !headers['Transfer-Encoding'])
    headers['Content-Length'] = String(Buffer.byteLength(body));
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: options.method ?? 'GET',
        headers,
        agent: options.agent ?? false,
        ca: options.ca,
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: () => JSON.parse(text) as Record<string, unknown>,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The nginx binary, when one is installed (Debian puts it in /usr/sbin). */
export function findNginx(): string | undefined {
  for (const candidate of ['nginx', '/usr/sbin/nginx', '/usr/local/sbin/nginx']) {
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * Installs Debian's nginx-light when no nginx is present and this runs as root with apt-get
 * (what CI does). Returns the binary, or the reason it is unavailable.
 */
export function ensureNginx(): { binary: string } | { reason: string } {
  const found = findNginx();
  if (found) return { binary: found };
  if (process.getuid?.() !== 0) return { reason: 'nginx is not installed and this is not root' };
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () =>
      execFileSync('apt-get', ['install', '-y', '-qq', 'nginx-light'], {
        env,
        stdio: 'ignore',
        timeout: 180_000,
      });
    try {
      install();
    } catch {
      execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore', timeout: 180_000 });
      install();
    }
  } catch (error) {
    return {
      reason: `nginx is not installed and apt-get could not install it (${(error as Error).message})`,
    };
  }
  const installed = findNginx();
  return installed ? { binary: installed } : { reason: 'nginx-light installed but no nginx binary found' };
}

/**
 * Replaces every `${NGINX_…}` placeholder the way the official nginx image's entrypoint does
 * (envsubst restricted to NGINX_ names), and fails on a placeholder without a value.
 */
export function renderTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{(NGINX_[A-Z0-9_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`No value for \${${name}} in the nginx template`);
    return value;
  });
}

export interface NginxProcess {
  errorLog(): string;
  stop(): Promise<void>;
}

/**
 * Runs nginx in the foreground on `config` (a complete main configuration file) with `prefix`
 * as its working directory, and waits until `readyPort` accepts connections.
 */
export async function startNginx(options: {
  binary: string;
  prefix: string;
  config: string;
  readyUrl: string;
  ca?: string;
}): Promise<NginxProcess> {
  const child = spawn(options.binary, ['-p', options.prefix, '-c', options.config, '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running.add(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const errorLog = () => {
    try {
      return `${stderr}${readFileSync(`${options.prefix}/error.log`, 'utf8')}`;
    } catch {
      return stderr;
    }
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited at start:\n${errorLog()}`);
    try {
      await send(options.readyUrl, { ca: options.ca, timeoutMs: 2_000 });
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(
          `nginx did not answer on ${options.readyUrl}: ${(error as Error).message}\n${errorLog()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    errorLog,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGQUIT: graceful shutdown of nginx; SIGKILL if it hangs.
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The seeded user's password grant, on a connection of its own. */
export function passwordGrant(url: string): Promise<RawResponse> {
  return send(`${url}/security/generate-token`, {
    method: 'POST',
    json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
  });
}

export function refreshGrant(url: string, refreshToken: string): Promise<RawResponse> {
  return send(`${url}/security/refresh-token`, {
    method: 'POST',
    json: { grant_type: 'refresh_token', scope: 'api', ...FRONTEND_CLIENT, refresh_token: refreshToken },
  });
}

/** The user's own account: the authenticated read every worker and node must accept a token for. */
export function readOwnAccount(url: string, accessToken: string): Promise<RawResponse> {
  return send(`${url}/users/${String(decodeJwtPart(accessToken, 1).sub)}`, { token: accessToken });
}
