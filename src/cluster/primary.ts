import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';
import type { Config } from '../config/config.ts';
import { createProcessLogger } from '../logging/error-log.ts';
import { ensureKeys } from '../oauth/key-rotation.ts';
import { openKeyRingStore, secureKeyDirectory } from '../services.ts';

/** A worker that dies this many times within CRASH_WINDOW_MS means something is broken for good. */
export const MAX_CRASHES = 5;
export const CRASH_WINDOW_MS = 60_000;
/** Delay before replacing a dead worker: doubles with each recent crash, up to the cap. */
const RESTART_DELAY_MS = 100;
const RESTART_DELAY_CAP_MS = 5_000;
/** After the workers' own grace period, how long the primary waits before it kills them. */
const SHUTDOWN_BACKSTOP_MS = 5_000;

type Logger = ReturnType<typeof createProcessLogger>;

/**
 * The primary process: makes sure the key ring exists, in a directory only the service may
 * enter, before any worker starts (nodes starting at once on a shared directory write exactly
 * one between them), forks the workers, replaces a worker that dies (with a growing delay,
 * giving up if they crash in a loop), and on SIGTERM/SIGINT lets the workers finish their
 * requests, close their backend connections and exit, then exits 0.
 *
 * A worker that fails to start while the service is starting stops the whole service with
 * exit code 1: its message (a configuration or connection problem) is the operator's to fix,
 * and forking it again would only repeat it. Once the service runs, a replacement that fails
 * to start counts as a crash, so a backend outage does not take the healthy workers down.
 */
export async function runPrimary(config: Config): Promise<void> {
  const log = createProcessLogger(config.appName);
  await assertPortFree(config.port, config.host);
  const notice = await secureKeyDirectory(config.keysDir);
  if (notice) log[notice.level](notice.message);
  const keyRing = openKeyRingStore(config.keysDir);
  if (await ensureKeys(keyRing)) log.info(`Generated a new key ring in ${config.keysDir}`);
  // A ring that cannot be read stops the start here, rather than in every worker.
  await keyRing.read();
  if (!config.mongodbUrl || !config.redisUrl) {
    log.info(
      'Embedded stores in use (MONGODB_URL or REDIS_URL unset): running 1 worker, since memory cannot be shared',
    );
  }
  const supervisor = new Supervisor(config, log);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      log.info(`${signal} received: finishing in-flight requests, then stopping`);
      supervisor.shutdown(0);
    });
  }
  log.info(`Starting ${config.workers} worker(s) on http://${config.host}:${config.port}`);
  supervisor.start();
}

/**
 * The workers bind the port with SO_REUSEPORT (see worker.ts), which would let them share it
 * silently with another instance started by mistake: a plain bind here fails instead.
 */
async function assertPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(error.code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use` : error.message),
      ),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

class Supervisor {
  readonly #config: Config;
  readonly #log: Logger;
  readonly #ready = new WeakSet<Worker>();
  /** Times of recent crashes, oldest first, within CRASH_WINDOW_MS. */
  readonly #crashes: number[] = [];
  /** True once every initial worker has said it serves. */
  #started = false;
  #stopping = false;
  #exiting = false;
  #exitCode = 0;

  constructor(config: Config, log: Logger) {
    this.#config = config;
    this.#log = log;
  }

  start(): void {
    cluster.on('exit', (worker, code, signal) => this.#onExit(worker, code, signal));
    for (let i = 0; i < this.#config.workers; i++) this.#fork();
  }

  #fork(): void {
    const worker = cluster.fork();
    worker.on('message', (message: unknown) => {
      if (message !== 'ready') return;
      this.#ready.add(worker);
      if (this.#started) this.#log.info(`Worker ${worker.process.pid} replaced the one that died`);
      else if (this.#workers().every((w) => this.#ready.has(w))) {
        this.#started = true;
        this.#log.info(`All ${this.#config.workers} worker(s) serving`);
      }
    });
  }

  #onExit(worker: Worker, code: number | null, signal: string | null): void {
    const how = signal ?? `exit code ${code}`;
    if (this.#stopping) {
      if (this.#workers().length === 0) this.#exit();
      return;
    }
    if (!this.#started && !this.#ready.has(worker)) {
      this.#log.fatal(
        `Worker ${worker.process.pid} failed to start (${how}); see its message above. Stopping.`,
      );
      this.shutdown(1);
      return;
    }
    const now = Date.now();
    this.#crashes.push(now);
    while ((this.#crashes[0] ?? now) <= now - CRASH_WINDOW_MS) this.#crashes.shift();
    if (this.#crashes.length >= MAX_CRASHES) {
      this.#log.fatal(
        `Workers died ${this.#crashes.length} times within ${CRASH_WINDOW_MS / 1000} s (last: ${how}): ` +
          'crash loop, giving up. Fix the cause shown above, then start the service again.',
      );
      this.shutdown(1);
      return;
    }
    const delay = Math.min(RESTART_DELAY_MS * 2 ** (this.#crashes.length - 1), RESTART_DELAY_CAP_MS);
    this.#log.error(`Worker ${worker.process.pid} died (${how}); replacing it in ${delay} ms`);
    setTimeout(() => this.#stopping || this.#fork(), delay);
  }

  /**
   * Asks every worker to stop: each stops accepting, finishes its in-flight requests within
   * SHUTDOWN_GRACE, closes its MongoDB and Redis connections and exits. The primary exits
   * when the last one has gone, or kills the stragglers after a backstop.
   */
  shutdown(exitCode: number): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#exitCode = exitCode;
    const workers = this.#workers();
    if (workers.length === 0) {
      this.#exit();
      return;
    }
    for (const worker of workers) {
      // A worker that has not said it serves may not listen for `shutdown` yet: a signal
      // reaches it either way (its handler stops it gracefully once installed).
      if (this.#ready.has(worker) && worker.isConnected()) worker.send('shutdown');
      else worker.process.kill('SIGTERM');
    }
    setTimeout(() => {
      for (const worker of this.#workers()) {
        this.#log.error(`Worker ${worker.process.pid} did not stop in time; killing it`);
        worker.process.kill('SIGKILL');
      }
      this.#exit();
    }, this.#config.shutdownGraceMs + SHUTDOWN_BACKSTOP_MS).unref();
  }

  #workers(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
  }

  #exit(): void {
    if (this.#exiting) return;
    this.#exiting = true;
    this.#log.info(`Stopped (exit code ${this.#exitCode})`);
    // pino writes asynchronously to stdout; give the last line its chance.
    setImmediate(() => process.exit(this.#exitCode));
  }
}
