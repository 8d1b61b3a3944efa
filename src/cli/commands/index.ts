import type { Command } from 'commander';
import type { Config } from '../../config.ts';
import { registerKeysGenerate } from './keys-generate.ts';

/** Adds one command to the program; configuration is loaded only by commands that need it. */
export type RegisterCommand = (program: Command, loadConfig: () => Config) => void;

export const COMMANDS: readonly RegisterCommand[] = [registerKeysGenerate];
