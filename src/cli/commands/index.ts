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
import type { RegisterCommand } from './register-command.ts';
import { registerRouteList } from './route-list.ts';
import { registerSeed } from './seed.ts';
import { registerTokenGenerate } from './token-generate.ts';

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
