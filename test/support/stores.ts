/**
 * `openStores` as the service calls it with its default settings (the table's startup timeout,
 * account cache size and, for the Redis URL given, replica acknowledgements), for suites that
 * name only the backends or the timeout.
 */
import { mock } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { type OpenStoresOptions, openStores } from '../../src/stores/open.ts';
import type { Stores } from '../../src/stores/stores.ts';

const packageInfo = readPackageInfo();

export function openTestStores(options: Partial<OpenStoresOptions>): Promise<Stores> {
  const defaults = loadConfig(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}, packageInfo);
  return openStores({
    startupTimeoutMs: defaults.backendStartupTimeoutMs,
    accountCacheSize: defaults.accountCacheSize,
    redisReplicaAcks: defaults.redisReplicaAcks,
    ...options,
  });
}

/**
 * The next call of the store's method fails as a backend failing mid-request would; the calls
 * after it run as before.
 */
export function failsOnce<S extends object>(store: S, method: keyof S & string): void {
  const methods = store as unknown as Record<string, () => Promise<unknown>>;
  mock.method(
    methods,
    method,
    async () => {
      throw new Error('the store failed mid-request');
    },
    { times: 1 },
  );
}
