import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { routeTable } from '../../http/routes/index.ts';
import { buildOpenApiDocument, toYaml } from '../../openapi/document.ts';
import type { RegisterCommand } from './register-command.ts';

export const DEFAULT_OPENAPI_OUTPUT = 'public/openapi.yaml';

export const registerOpenApiGenerate: RegisterCommand = (program, _loadConfig, loadDescription) => {
  program
    .command('openapi:generate')
    .description('Write the OpenAPI 3.1 description of every route (servers[0] is APP_URL)')
    .option(
      '--output <file>',
      'where to write it; a .json name writes JSON, anything else YAML',
      DEFAULT_OPENAPI_OUTPUT,
    )
    .action((options: { output: string }) => {
      const description = loadDescription();
      const document = buildOpenApiDocument(routeTable(description.grants), description);
      const text = options.output.endsWith('.json')
        ? `${JSON.stringify(document, null, 2)}\n`
        : toYaml(document);
      mkdirSync(dirname(options.output), { recursive: true });
      // Written beside the target and renamed: a reader (a web server) never sees half a file.
      const partial = `${options.output}.${process.pid}.tmp`;
      try {
        writeFileSync(partial, text);
        renameSync(partial, options.output);
      } finally {
        rmSync(partial, { force: true });
      }
      const operations = Object.values(document.paths).reduce((sum, ops) => sum + Object.keys(ops).length, 0);
      console.log(`Wrote ${options.output}: ${operations} operations, server ${description.appUrl}`);
    });
};
