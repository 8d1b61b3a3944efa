import { SEED, seed } from '../../seed.ts';
import { openAccountServices } from '../../services.ts';
import { seconds } from '../options.ts';
import type { RegisterCommand } from './index.ts';

export const registerSeed: RegisterCommand = (program, loadConfig) => {
  program
    .command('seed')
    .description(
      'Create the seed records that are missing in MongoDB (scope, OAuth clients, admin and user); ' +
        'existing records are never changed',
    )
    .option('--timeout <seconds>', 'how long to wait for MongoDB (default: BACKEND_STARTUP_TIMEOUT)', seconds)
    .action(async (options: { timeout?: number }) => {
      const config = loadConfig();
      if (!config.mongodbUrl) {
        throw new Error(
          'MONGODB_URL is not set: without it the service keeps accounts in memory and seeds them itself at start',
        );
      }
      const services = await openAccountServices(config, {
        startupTimeoutMs: options.timeout === undefined ? undefined : options.timeout * 1000,
      });
      try {
        const created = await seed(services.stores, services.passwords);
        console.log(
          created.length > 0 ? `Created ${created.join(', ')}` : 'Every seed record is already there',
        );
        if (created.some((record) => !record.startsWith('scope'))) {
          console.log(
            `The seeded secrets and passwords are publicly known (e.g. admin "${SEED.admin.identity}"): ` +
              'replace them before production',
          );
        }
      } finally {
        await services.close();
      }
    });
};
