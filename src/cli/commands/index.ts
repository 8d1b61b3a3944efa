import type { Command } from 'commander';
import type { Config, ServiceDescription } from '../../config/config.ts';
import { registerAdminCreate } from './admin-create.ts';
import { registerBackendsCheck } from './backends-check.ts';
import { registerClientCommands } from './client.ts';
import { registerConfigCheck } from './config-check.ts';
import { registerConfigDocs } from './config-docs.ts';
import { registerKeysGenerate } from './keys-generate.ts';
import { registerKeysList } from './keys-list.ts';
import { registerKeysRetire } from './keys-retire.ts';
import { registerKeysRotate } from './keys-rotate.ts';
import { registerOpenApiGenerate } from './openapi-generate.ts';
import { registerRouteList } from './route-list.ts';
import { registerSeed } from './seed.ts';
import { registerTokenGenerate } from './token-generate.ts';

/**
 * Adds one command to the program. Configuration is loaded only by commands that need it:
 * the whole runtime configuration, or only the description of the service.
 */
export type RegisterCommand = (
  program: Command,
  loadConfig: () => Config,
  loadDescription: () => ServiceDescription,
) => void;

export const COMMANDS: readonly RegisterCommand[] = [
  registerKeysGenerate,
  registerKeysRotate,
  registerKeysRetire,
  registerKeysList,
  registerAdminCreate,
  registerClientCommands,
  registerSeed,
  registerBackendsCheck,
  registerTokenGenerate,
  registerRouteList,
  registerOpenApiGenerate,
  registerConfigDocs,
  registerConfigCheck,
];
