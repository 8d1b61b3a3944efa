import cluster from 'node:cluster';
import { createApplication } from '../app.ts';
import type { Config } from '../config.ts';
import { createProcessLogger } from '../logging/error-log.ts';
import { defaultsStillInPlace } from '../seed.ts';

/**
 * One HTTP worker. It tells the primary when it serves, and on `shutdown` (or SIGTERM/SIGINT
 * when run alone) stops accepting connections, lets in-flight requests finish within the
 * grace period, closes its backend connections and exits 0.
 */
export async function runWorker(config: Config): Promise<void> {
  const log = createProcessLogger(config.appName);
  const app = await createApplication(config, {
    log: (message) => log.info(message),
    hashThreads: config.hashThreads,
  });
  if (config.production) {
    for (const warning of await defaultsStillInPlace(app.stores, app.passwords)) {
      log.warn(`Publicly known default in production: ${warning}; replace it`);
    }
  }
  await new Promise<void>((resolve) => app.server.listen(config.port, config.host, resolve));
  if (cluster.isWorker) process.send?.('ready');

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    app.server.close(async () => {
      await app.close();
      process.exit(0);
    });
    app.server.closeIdleConnections();
    setTimeout(() => app.server.closeAllConnections(), config.shutdownGraceMs).unref();
  };
  process.on('message', (message) => message === 'shutdown' && stop());
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
