/**
 * Real backend servers that a test starts for itself on a free loopback port, so it can stop
 * and restart them without disturbing anything else (never the machine's own 6379/27017).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { MongoClient } from 'mongodb';

export interface Backend {
  url: string;
  /** Stops the server, keeping its port and data dir for `restart`. */
  stop(): Promise<void>;
  /** Starts it again on the same port over the same data dir and waits until it is ready. */
  restart(): Promise<void>;
  /** Stops it and removes its data dir. */
  dispose(): Promise<void>;
}

/** Whether an executable is on PATH: tests that need one skip with a reason when it is not. */
export function onPath(binary: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, binary), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** A name no other test run uses, for databases and key prefixes. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** The same MongoDB URL pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(url);
  if (!match) throw new Error(`Not a MongoDB URL: ${url}`);
  return `${match[1]}/${database}${match[2] ?? ''}`;
}

export async function startRedis(): Promise<Backend> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ];
  return manage('redis-server', args, port, dir, `redis://127.0.0.1:${port}`, async () => {});
}

export async function startFerretDb(): Promise<Backend> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-'));
  const args = [
    '--handler=sqlite',
    `--sqlite-url=file:${dir}/`,
    `--state-dir=${dir}`,
    `--listen-addr=127.0.0.1:${port}`,
    // The default debug listener is a fixed port; two instances would clash on it.
    '--debug-addr=-',
    '--telemetry=disable',
    '--log-level=error',
  ];
  const url = `mongodb://127.0.0.1:${port}/test`;
  // FerretDB accepts TCP before its backend is usable, so also wait for a ping.
  return manage('ferretdb', args, port, dir, url, () => ping(url));
}

const running = new Set<ChildProcess>();
// A test that crashes must not leave servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

async function manage(
  binary: string,
  args: string[],
  port: number,
  dir: string,
  url: string,
  ready: () => Promise<void>,
): Promise<Backend> {
  let child: ChildProcess | undefined;
  const start = async () => {
    const spawned = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    spawned.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    running.add(spawned);
    spawned.once('exit', () => running.delete(spawned));
    child = spawned;
    await waitUntil(async () => {
      if (spawned.exitCode !== null || spawned.signalCode !== null) {
        throw new Error(`${binary} exited (${spawned.exitCode ?? spawned.signalCode}): ${stderr}`);
      }
      await tcpConnect(port);
      await ready();
    }, 20000);
  };
  const stop = async () => {
    const current = child;
    child = undefined;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    current.kill('SIGTERM');
    const timer = setTimeout(() => current.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return {
    url,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

async function ping(url: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1000 });
  try {
    await client.db().command({ ping: 1 });
  } finally {
    await client.close();
  }
}

/** Retries `check` until it resolves; a failure is rethrown once `timeoutMs` has passed. */
async function waitUntil(check: () => Promise<void>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline || (error instanceof Error && error.message.includes(' exited (')))
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * Why a suite that needs private Redis and FerretDB servers cannot run on this machine, or
 * false when it can. The reason is printed, so a skipped suite never goes unnoticed.
 */
export function realServersMissing(suite: string): string | false {
  const missing = ['redis-server', 'ferretdb'].filter((binary) => !onPath(binary));
  if (missing.length === 0) return false;
  const reason = `${suite} not run: ${missing.join(' and ')} not on PATH`;
  console.log(`# ${reason}`);
  return reason;
}
