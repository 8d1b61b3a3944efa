import { InvalidArgumentError } from 'commander';
import { createPasswordHasher } from '../../accounts/password-hasher.ts';
import { SEED, seed } from '../../seed.ts';
import { openStores } from '../../stores/open.ts';
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
      const stores = await openStores({
        mongodbUrl: config.mongodbUrl,
        startupTimeoutMs:
          options.timeout === undefined ? config.backendStartupTimeoutMs : options.timeout * 1000,
      });
      const passwords = createPasswordHasher({ cost: config.bcryptCost, threads: 1 });
      try {
        const created = await seed(stores, passwords);
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
        await Promise.allSettled([stores.close(), passwords.close()]);
      }
    });
};

function seconds(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError('must be a whole number of seconds (1 or more)');
  return Number(value);
}
