import { Option } from 'commander';
import type { Config } from '../../config/config.ts';
import { OPERATOR } from '../../identity.ts';
import type { ClientManagement } from '../../oauth/client-management.ts';
import { viewClient } from '../../oauth/client-representation.ts';
import { CreateClientBody, type NewClient } from '../../oauth/client-schemas.ts';
import { CLIENT_TYPES, GRANT_TYPES } from '../../oauth/model.ts';
import { compileValidator } from '../../validation.ts';
import { checked, kebabOption } from '../checked.ts';
import { withOperatorServices } from '../operator-services.ts';
import { printTable } from '../table.ts';
import type { RegisterCommand } from './index.ts';

/**
 * `client:create`, `client:list`, `client:delete`: the client routes of the API at the command
 * line, through the same client service, acting as the operator. For MongoDB deployments:
 * without MONGODB_URL clients live in the memory of the running service.
 */

const validateNewClient = compileValidator<NewClient>(CreateClientBody);

/** The option that carries a field: `redirectUris.0` came from `--redirect-uri`. */
function optionOf(field: string): string {
  if (field.startsWith('redirectUris')) return '--redirect-uri';
  if (field.startsWith('grants')) return '--grant';
  return kebabOption(field);
}

/** Runs `action` with the client service, over MongoDB; whether it writes decides what it needs. */
function withClients(
  config: Config,
  access: 'reads' | 'writes',
  action: (clients: ClientManagement) => Promise<void>,
): Promise<void> {
  const clients = { what: 'OAuth clients', api: '/oauth-clients', readOnly: access === 'reads' };
  return withOperatorServices(config, clients, (services) => action(services.oauthClients));
}

/** A repeatable option's values, in order. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

interface CreateOptions {
  name: string;
  type: NewClient['type'];
  redirectUri: string[];
  grant: string[];
  accounts: NewClient['accounts'];
}

export const registerClientCommands: RegisterCommand = (program, loadConfig) => {
  program
    .command('client:create')
    .description(
      "Register an OAuth client in MongoDB and print it as JSON; a confidential client's secret is " +
        'in that output and never shown again',
    )
    .requiredOption('--name <name>', 'the client_id: letters, digits and . _ -')
    .addOption(
      new Option('--type <type>', 'confidential (has a secret) or public (has none)')
        .choices(CLIENT_TYPES)
        .makeOptionMandatory(),
    )
    .option(
      '--redirect-uri <uri>',
      'an exact redirect URI of the authorization code grant (repeatable)',
      collect,
      [],
    )
    .addOption(
      new Option('--grant <grant>', `a grant the client may use (repeatable): ${GRANT_TYPES.join(', ')}`)
        .argParser(collect)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--accounts <store>', 'the accounts it signs in').choices(['user', 'admin']).default('user'),
    )
    .action(async (options: CreateOptions) => {
      const input = await checked(
        () =>
          validateNewClient.check({
            name: options.name,
            type: options.type,
            redirectUris: options.redirectUri,
            grants: options.grant,
            accounts: options.accounts,
          }),
        optionOf,
      );
      await withClients(loadConfig(), 'writes', async (clients) => {
        const { client, secret } = await checked(() => clients.create(OPERATOR, input), optionOf);
        console.log(
          JSON.stringify({ ...viewClient(client), ...(secret === undefined ? {} : { secret }) }, null, 2),
        );
      });
    });

  program
    .command('client:list')
    .description('List the OAuth clients in MongoDB: name, type, accounts, grants, redirect URIs')
    .option('--json', 'print the list as JSON', false)
    .action(async (options: { json: boolean }) => {
      await withClients(loadConfig(), 'reads', async (clients) => {
        const views = (await clients.list(OPERATOR)).map((client) => viewClient(client));
        if (options.json) {
          console.log(JSON.stringify(views, null, 2));
          return;
        }
        printTable(
          {
            name: 'NAME',
            type: 'TYPE',
            accounts: 'ACCOUNTS',
            grants: 'GRANTS',
            redirectUris: 'REDIRECT URIS',
          },
          views.map((view) => ({
            name: view.name,
            type: view.type,
            accounts: view.accounts,
            grants: view.grants.join(','),
            redirectUris: view.redirectUris.join(' ') || '-',
          })),
        );
      });
    });

  program
    .command('client:delete')
    .description('Delete an OAuth client from MongoDB; its refresh tokens and codes are refused from then on')
    .argument('<name>', 'the client_id')
    .action(async (name: string) => {
      await withClients(loadConfig(), 'writes', async (clients) => {
        await clients.remove(OPERATOR, name);
        console.log(`Deleted client ${name}`);
      });
    });
};
