import type { Config } from '../config/config.ts';
import { type AccountServices, openAccountServices } from '../services.ts';
import { cachingNodesRunning } from '../stores/cache/announcements.ts';
import type { Stores } from '../stores/stores.ts';

/**
 * Runs a command's work through the service's own services over MongoDB, then closes them
 * (they hold the process open: sockets, worker threads). Without MONGODB_URL the records
 * live in the memory of the running service, which a separate command cannot reach. A command
 * that writes is refused while the service's nodes cache and this run lacks their channel.
 */
export async function withOperatorServices(
  config: Config,
  records: { what: string; api: string; readOnly?: boolean },
  action: (services: AccountServices) => Promise<void>,
): Promise<void> {
  if (!config.mongodbUrl) {
    throw new Error(
      `MONGODB_URL is not set: without it ${records.what} live in the memory of the running service, ` +
        `which this command cannot reach (use ${records.api} there)`,
    );
  }
  const services = await openAccountServices(config);
  try {
    if (!records.readOnly) await assertChangesReachNodes(config, services.stores);
    await action(services);
  } finally {
    await services.close();
  }
}

/**
 * The service's nodes keep accounts and clients in memory and learn of every change over
 * Redis: a change written without REDIS_URL would publish nothing, and they would go on
 * answering from memory for up to 30 s. So a command that writes needs the channel whenever
 * they have announced (in MongoDB) that they cache.
 */
export async function assertChangesReachNodes(config: Config, stores: Stores): Promise<void> {
  if (config.redisUrl) return;
  const since = await cachingNodesRunning(stores.cachingNodes);
  if (since) {
    throw new Error(
      `REDIS_URL is not set, but the service's nodes keep accounts and clients in memory and learn of ` +
        `changes over Redis (one said so at ${since.toISOString()}): set REDIS_URL as they have it, ` +
        'or they would not see this change for up to 30 s',
    );
  }
}
