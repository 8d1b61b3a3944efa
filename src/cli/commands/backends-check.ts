import { hostOf } from '../../logging/redact-url.ts';
import { type OpenStoresOptions, openStores } from '../../stores/open.ts';
import { seconds } from '../options.ts';
import type { RegisterCommand } from './register-command.ts';

/**
 * The readiness probe (the service has no health endpoint): connects to each configured
 * backend the way the service does, with a short deadline, and prints one line per backend.
 * A backend whose URL is unset is embedded in the service's own memory, which cannot be
 * down, so it counts as answering. Messages name hosts, never credentials.
 */
export const registerBackendsCheck: RegisterCommand = (program, loadConfig) => {
  program
    .command('backends:check')
    .description('Exit 0 when MongoDB and Redis answer, 1 when either does not (a readiness probe)')
    .option('--timeout <seconds>', 'how long each backend may take to answer', seconds, 3)
    .action(async (options: { timeout: number }) => {
      const config = loadConfig();
      const opening = {
        startupTimeoutMs: options.timeout * 1000,
        accountCacheSize: config.accountCacheSize,
        redisReplicaAcks: config.redisReplicaAcks,
      };
      const results = await Promise.all([
        check('MongoDB', 'MONGODB_URL', config.mongodbUrl, (url) => ({ mongodbUrl: url }), opening),
        check('Redis', 'REDIS_URL', config.redisUrl, (url) => ({ redisUrl: url }), opening),
      ]);
      for (const { line } of results) console.log(line);
      const down = results.filter((result) => !result.answers).map((result) => result.backend);
      if (down.length > 0) throw new Error(`not ready: ${down.join(' and ')} did not answer`);
    });
};

async function check(
  backend: string,
  variable: string,
  url: string | undefined,
  only: (url: string) => Pick<OpenStoresOptions, 'mongodbUrl' | 'redisUrl'>,
  opening: Pick<OpenStoresOptions, 'startupTimeoutMs' | 'accountCacheSize' | 'redisReplicaAcks'>,
): Promise<{ backend: string; answers: boolean; line: string }> {
  if (!url) return { backend, answers: true, line: `${backend}: embedded (${variable} unset)` };
  const started = Date.now();
  try {
    // The service's own connection code, for this backend alone, so each is judged on its own.
    const stores = await openStores({ ...only(url), ...opening });
    await stores.close();
    return {
      backend,
      answers: true,
      line: `${backend} at ${hostOf(url)}: answers (${Date.now() - started} ms)`,
    };
  } catch (error) {
    // openStores names the backend and host, with any password removed.
    return { backend, answers: false, line: (error as Error).message };
  }
}
