/**
 * `openStores` as the service calls it with its default settings (the table's startup timeout
 * and account cache size), for suites that name only the backends or the timeout.
 */
import { loadConfig } from '../../src/config/load.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { type OpenStoresOptions, openStores } from '../../src/stores/open.ts';
import type { Stores } from '../../src/stores/stores.ts';

const defaults = loadConfig({}, readPackageInfo());

export function openTestStores(options: Partial<OpenStoresOptions>): Promise<Stores> {
  return openStores({
    startupTimeoutMs: defaults.backendStartupTimeoutMs,
    accountCacheSize: defaults.accountCacheSize,
    ...options,
  });
}
