import type { Command } from 'commander';
import type { Config } from '../../config.ts';
import { registerAdminCreate } from './admin-create.ts';
import { registerKeysGenerate } from './keys-generate.ts';
import { registerOpenApiGenerate } from './openapi-generate.ts';
import { registerRouteList } from './route-list.ts';
import { registerSeed } from './seed.ts';
import { registerTokenGenerate } from './token-generate.ts';

/** Adds one command to the program; configuration is loaded only by commands that need it. */
export type RegisterCommand = (program: Command, loadConfig: () => Config) => void;

export const COMMANDS: readonly RegisterCommand[] = [
  registerKeysGenerate,
  registerAdminCreate,
  registerSeed,
  registerTokenGenerate,
  registerRouteList,
  registerOpenApiGenerate,
];
