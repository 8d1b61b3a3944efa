import type { Config } from '../config/config.ts';
import { type AccountServices, openAccountServices } from '../services.ts';

/**
 * Runs a command's work through the service's own services over MongoDB, then closes them
 * (they hold the process open: sockets, worker threads). Without MONGODB_URL the records
 * live in the memory of the running service, which a separate command cannot reach.
 */
export async function withOperatorServices(
  config: Config,
  records: { what: string; api: string },
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
    await action(services);
  } finally {
    await services.close();
  }
}
