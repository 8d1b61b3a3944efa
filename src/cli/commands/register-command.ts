import type { Command } from 'commander';
import type { Config, ServiceDescription } from '../../config/config.ts';

/**
 * Adds one command to the program. Configuration is loaded only by commands that need it:
 * the whole runtime configuration, or only the description of the service.
 */
export type RegisterCommand = (
  program: Command,
  loadConfig: () => Config,
  loadDescription: () => ServiceDescription,
) => void;
