import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.ts';
import { createProcessLogger } from '../logging/error-log.ts';
import { ensureKeyFiles } from '../oauth/keys.ts';

/** A worker that dies this many times within CRASH_WINDOW_MS means something is broken for good. */
const MAX_CRASHES = 5;
const CRASH_WINDOW_MS = 60_000;

/**
 * The primary process: makes sure the key files exist before any worker starts (so no two
 * processes ever generate them), forks the workers, replaces a worker that dies (with a
 * growing delay, giving up if they crash in a loop), and on SIGTERM/SIGINT lets the workers
 * finish their requests and exits 0.
 */
export async function runPrimary(config: Config): Promise<void> {
  const log = createProcessLogger(config.appName);
  if (await ensureKeyFiles(config.keysDir)) log.info(`Generated new key files in ${config.keysDir}`);
  if (!config.mongodbUrl || !config.redisUrl) {
    log.info(
      'Embedded stores in use (MONGODB_URL or REDIS_URL unset): running 1 worker, since memory cannot be shared',
    );
  }

  const crashes: number[] = [];
  let stopping = false;
  const ready = new WeakSet<Worker>();

  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: unknown) => {
      if (message === 'ready') ready.add(worker);
    });
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    if (!ready.has(worker)) {
      log.fatal(`A worker failed to start (exit code ${code}); see its message above. Stopping.`);
      return shutdown(1);
    }
    const now = Date.now();
    crashes.push(now);
    while (crashes.length > 0 && (crashes[0] ?? now) < now - CRASH_WINDOW_MS) crashes.shift();
    if (crashes.length >= MAX_CRASHES) {
      log.fatal(`Workers crashed ${crashes.length} times within ${CRASH_WINDOW_MS / 1000}s; giving up`);
      return shutdown(1);
    }
    const delay = Math.min(100 * 2 ** (crashes.length - 1), 5_000);
    log.error(
      `Worker ${worker.process.pid} died (${signal ?? `exit code ${code}`}); replacing it in ${delay} ms`,
    );
    setTimeout(() => stopping || fork(), delay);
  });

  function shutdown(exitCode: number): void {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(exitCode);
    for (const worker of workers) worker.send('shutdown');
    // Workers finish in-flight requests within their own grace period; this is the backstop.
    setTimeout(() => {
      for (const worker of workers) worker.process.kill('SIGKILL');
      process.exit(exitCode);
    }, config.shutdownGraceMs + 5_000).unref();
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
    });
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      log.info(`${signal} received: finishing in-flight requests, then stopping`);
      shutdown(0);
    });
  }

  log.info(`Starting ${config.workers} worker(s) on http://${config.host}:${config.port}`);
  for (let i = 0; i < config.workers; i++) fork();
}
