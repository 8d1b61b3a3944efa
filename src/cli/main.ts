#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { config as loadDotenv } from 'dotenv';
import { ConfigError } from '../config/config.ts';
import { loadConfig, loadServiceDescription } from '../config/load.ts';
import { readPackageInfo } from '../package-info.ts';
import { COMMANDS } from './commands/index.ts';

/**
 * The operators' and admins' command line: `npm run cli -- <command> [options]`, or the
 * package bin. Every command has `--help`; success exits 0, failure prints one line and exits 1.
 */
loadDotenv({ quiet: true });
const packageInfo = readPackageInfo();
const program = new Command('token-service')
  .description('Administer the token service')
  .version(packageInfo.version)
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(message) });

for (const register of COMMANDS) {
  register(
    program,
    () => loadConfig(process.env, packageInfo),
    () => loadServiceDescription(process.env, packageInfo),
  );
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
  console.error(`error: ${message}`);
  process.exit(1);
}
