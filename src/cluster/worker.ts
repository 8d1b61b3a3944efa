import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { type Application, createApplication } from '../app.ts';
import type { Config } from '../config/config.ts';
import { createProcessLogger } from '../logging/error-log.ts';
import { notForProduction } from '../production-check.ts';

/** While stopping, how often connections that finished their last request are closed. */
const IDLE_SWEEP_MS = 100;
/** After the grace period, how long closing the backend connections may take before the exit. */
const CLOSE_BACKSTOP_MS = 3_000;

/**
 * One HTTP worker. It tells the primary when it serves, and on `shutdown` (or SIGTERM/SIGINT,
 * also when run alone) stops accepting connections, lets in-flight requests finish within the
 * grace period, closes its MongoDB/Redis connections and hashing threads, and exits 0.
 */
export async function runWorker(config: Config): Promise<void> {
  const log = createProcessLogger(config.appName);
  let app: Application | undefined;
  let stopping = false;

  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Not serving yet: nothing is in flight, and the stores are still connecting.
    if (!app) process.exit(0);
    const { server } = app;
    const opened = app;
    drain(server, config.shutdownGraceMs, async () => {
      await opened.close();
      process.exit(0);
    });
    setTimeout(() => {
      log.error('Backend connections did not close in time; exiting anyway');
      process.exit(0);
    }, config.shutdownGraceMs + CLOSE_BACKSTOP_MS).unref();
  };
  process.on('message', (message) => message === 'shutdown' && stop());
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  app = await createApplication(config, {
    log: (message) => log.info(message),
    hashThreads: config.hashThreads,
  });
  // One entry per start: the first worker's (a replacement worker does not repeat it).
  if (config.production && (!cluster.isWorker || cluster.worker?.id === 1)) {
    const found = await notForProduction(config, app.stores, app.passwords);
    if (found.length > 0)
      log.warn(
        { notForProduction: found },
        `Not for production (${found.length}; \`config:check\` lists them too): ${found.join('; ')}`,
      );
  }
  await listen(app.server, config.port, config.host);
  if (stopping) return;
  if (cluster.isWorker) process.send?.('ready');
  else log.info(`Serving on http://${config.host}:${config.port}`);
}

/**
 * In a cluster on Linux every worker binds its own socket with SO_REUSEPORT and the kernel
 * spreads new connections evenly over them. The alternative (the primary accepts and hands
 * each connection to a worker) has a failure mode this avoids: a connection handed to a worker
 * at the moment it dies stays open in the primary, so its client hangs until its own timeout
 * instead of seeing the connection reset. The primary has checked the port is free, so no
 * unrelated process shares it.
 */
function listen(server: Server, port: number, host: string): Promise<void> {
  const reusePort = cluster.isWorker && process.platform === 'linux' && port !== 0;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, exclusive: reusePort, reusePort }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * Stops accepting connections and lets the requests in flight finish. A keep-alive connection
 * would otherwise stay open after its last response (and hold the process for its whole idle
 * timeout), so connections are closed as soon as they are idle, and a request that still
 * arrives on an open connection is answered with `Connection: close`. Whatever is still
 * running after `graceMs` is cut off.
 */
function drain(server: Server, graceMs: number, closed: () => Promise<void>): void {
  server.prependListener('request', (_req, res) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  });
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  server.close(() => {
    clearInterval(sweep);
    void closed();
  });
  server.closeIdleConnections();
  setTimeout(() => server.closeAllConnections(), graceMs).unref();
}
