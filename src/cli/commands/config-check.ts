import { notForProduction } from '../../production-check.ts';
import { seed } from '../../seed.ts';
import { openAccountServices } from '../../services.ts';
import { seconds } from '../options.ts';
import type { RegisterCommand } from './index.ts';

/**
 * `config:check`: prints, one per line, what a production deployment should not have (the
 * list a production start logs), and exits 1 when there is any, so a deploy pipeline can stop
 * on it. It asks the stores whether a publicly known seed secret is still accepted: MongoDB's,
 * or without MONGODB_URL the memory a start seeds, as the service's own would be.
 */
export const registerConfigCheck: RegisterCommand = (program, loadConfig) => {
  program
    .command('config:check')
    .description('List what a production deployment should not have; exit 1 when there is anything')
    .option(
      '--timeout <seconds>',
      'how long to wait for MongoDB and Redis (default: BACKEND_STARTUP_TIMEOUT)',
      seconds,
    )
    .action(async (options: { timeout?: number }) => {
      const config = loadConfig();
      const services = await openAccountServices(config, {
        startupTimeoutMs: options.timeout === undefined ? undefined : options.timeout * 1000,
      });
      let found: string[];
      try {
        if (!config.mongodbUrl) await seed(services.stores, services.passwords);
        found = await notForProduction(config, services.stores, services.passwords);
      } finally {
        await services.close();
      }
      for (const line of found) console.log(line);
      if (found.length > 0)
        throw new Error(`${found.length} thing(s) a production deployment should not have (listed above)`);
      console.log('Nothing a production deployment should not have');
    });
};
