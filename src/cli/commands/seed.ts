import {
  removedSeedRecords,
  restoreSeedRecords,
  SEED,
  SEED_RECORDS,
  seed,
  unseededSeedRecords,
} from '../../seed.ts';
import { openAccountServices } from '../../services.ts';
import { assertChangesReachNodes } from '../operator-services.ts';
import { seconds } from '../options.ts';
import type { RegisterCommand } from './register-command.ts';

const RECORDS = SEED_RECORDS.map((record) => record.key).join(', ');

export const registerSeed: RegisterCommand = (program, loadConfig) => {
  program
    .command('seed')
    .description(
      'Create the seed records in MongoDB (scope, OAuth clients, admin and user) that were never ' +
        'seeded; existing records are never changed, and one an operator removed is not created again',
    )
    .option(
      '--restore [records...]',
      `create again, with its publicly known secret, each named seed record that is missing (${RECORDS}), or all of them`,
    )
    .option('--timeout <seconds>', 'how long to wait for MongoDB (default: BACKEND_STARTUP_TIMEOUT)', seconds)
    .action(async (options: { restore?: true | string[]; timeout?: number }) => {
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
        const { stores, passwords } = services;
        await assertChangesReachNodes(config, stores);
        const created =
          options.restore === undefined
            ? await seed(stores, passwords)
            : await restoreSeedRecords(
                stores,
                passwords,
                options.restore === true ? undefined : options.restore,
              );
        const removed = await removedSeedRecords(stores);
        const unseeded = await unseededSeedRecords(stores);
        const verb = options.restore === undefined ? 'Created' : 'Restored';
        console.log(
          created.length > 0
            ? `${verb} ${created.join(', ')}`
            : removed.length > 0 || unseeded.length > 0
              ? 'Nothing to create'
              : 'Every seed record is already there',
        );
        if (removed.length > 0) {
          console.log(
            `Missing since they were seeded (an operator removed or renamed them), so not seeded again: ` +
              `${removed.join(', ')} (seed --restore <record> creates one again)`,
          );
        }
        if (unseeded.length > 0) {
          console.log(
            `Never seeded, as their store already held accounts of its own at the first seed: ` +
              `${unseeded.join(', ')} (seed --restore <record> creates one anyway)`,
          );
        }
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
