import cluster from 'node:cluster';
import { config as loadDotenv } from 'dotenv';
import { runPrimary } from './cluster/primary.ts';
import { runWorker } from './cluster/worker.ts';
import { ConfigError } from './config/config.ts';
import { loadConfig } from './config/load.ts';
import { readPackageInfo } from './package-info.ts';

/** Entry point: the primary prepares keys and forks HTTP workers; each worker serves. */
loadDotenv({ quiet: true });

try {
  const config = loadConfig(process.env, readPackageInfo());
  if (cluster.isPrimary) await runPrimary(config);
  else await runWorker(config);
} catch (error) {
  // A configuration error is the operator's to fix: say which variable, without a stack.
  const message = error instanceof ConfigError ? error.message : `Start failed: ${(error as Error).message}`;
  console.error(message);
  process.exit(1);
}
