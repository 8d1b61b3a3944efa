import { type Command, Option } from 'commander';
import { OPERATOR } from '../../caller.ts';
import type { Config } from '../../config/config.ts';
import type { ClientManagement, ClientWithSecret } from '../../oauth/client-management.ts';
import { viewClient } from '../../oauth/client-representation.ts';
import { DEFAULT_SECRET_OVERLAP_SECONDS, MAX_SECRET_OVERLAP_SECONDS } from '../../oauth/client-secrets.ts';
import { CLIENT_TYPES, GRANT_TYPES } from '../../oauth/model.ts';
import { checked, kebabOption } from '../checked.ts';
import { withOperatorServices } from '../operator-services.ts';
import { printTable } from '../table.ts';
import type { RegisterCommand } from './register-command.ts';

/**
 * `client:create`, `client:list`, `client:show`, `client:update`, `client:rotate-secret`,
 * `client:retire-secret`, `client:delete`: the client routes of the API at the command line,
 * through the same client service, acting as the operator, so that a fresh deployment without
 * a superuser's token can do all of it. The service checks every input: the commands only
 * turn options into its fields, and its refusals back into the options' names. For MongoDB
 * deployments: without MONGODB_URL clients live in the memory of the running service.
 */

/** The option (or command) that gives a field: `redirectUris.0` came from `--redirect-uri`. */
function optionOf(field: string): string {
  if (field.startsWith('redirectUris')) return '--redirect-uri';
  if (field.startsWith('grants')) return '--grant';
  if (field === 'previousSecretOverlapSeconds') return '--overlap';
  // Asked for by the command itself, not by an option.
  if (field === 'rotateSecret') return 'client:rotate-secret';
  if (field === 'retirePreviousSecret') return 'client:retire-secret';
  return kebabOption(field);
}

/**
 * Runs `action` with the client service, over MongoDB; whether it writes decides what it
 * needs. The service's refusals name the options.
 */
function withClients(
  config: Config,
  access: 'reads' | 'writes',
  action: (clients: ClientManagement) => Promise<void>,
): Promise<void> {
  const clients = { what: 'OAuth clients', api: '/oauth-clients', readOnly: access === 'reads' };
  return withOperatorServices(config, clients, (services) =>
    checked(() => action(services.oauthClients), optionOf),
  );
}

/** The client as JSON, with its secret when this very command made one: it is never shown again. */
function printClient({ client, secret }: ClientWithSecret): void {
  console.log(
    JSON.stringify({ ...viewClient(client), ...(secret === undefined ? {} : { secret }) }, null, 2),
  );
}

/** A repeatable option's values, in order. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Whole seconds as a number; anything else goes to the client service as it is, which refuses it. */
const wholeNumber = (value: string): number | string => (/^\d{1,15}$/.test(value) ? Number(value) : value);

const grantOption = (what: string) =>
  new Option('--grant <grant>', `${what} (repeatable): ${GRANT_TYPES.join(', ')}`).argParser(collect);

const redirectUriOption = (what: string) =>
  new Option('--redirect-uri <uri>', `${what} (repeatable)`).argParser(collect);

interface CreateOptions {
  name: string;
  type: string;
  redirectUri?: string[];
  grant: string[];
  accounts: string;
}

interface UpdateOptions {
  redirectUri?: string[];
  /** false with `--no-redirect-uris`. */
  redirectUris: boolean;
  grant?: string[];
}

export const registerClientCommands: RegisterCommand = (program, loadConfig) => {
  const clientCommand = (name: string, description: string): Command =>
    program.command(name).description(description);

  clientCommand(
    'client:create',
    "Register an OAuth client in MongoDB and print it as JSON; a confidential client's secret is " +
      'in that output and never shown again',
  )
    .requiredOption('--name <name>', 'the client_id: letters, digits and . _ -')
    .addOption(
      new Option(
        '--type <type>',
        `${CLIENT_TYPES.join(' or ')}: confidential has a secret, public (a browser or native app) none`,
      ).makeOptionMandatory(),
    )
    .addOption(redirectUriOption('an exact redirect URI of the authorization code grant'))
    .addOption(grantOption('a grant the client may use').makeOptionMandatory())
    .option('--accounts <store>', 'the accounts it signs in: user or admin', 'user')
    .action(async (options: CreateOptions) => {
      await withClients(loadConfig(), 'writes', async (clients) => {
        printClient(
          await clients.create(OPERATOR, {
            name: options.name,
            type: options.type,
            redirectUris: options.redirectUri ?? [],
            grants: options.grant,
            accounts: options.accounts,
          }),
        );
      });
    });

  clientCommand(
    'client:list',
    'List the OAuth clients in MongoDB: name, type, accounts, grants, until when a previous secret ' +
      'is accepted, redirect URIs',
  )
    .option('--json', 'print the list as JSON', false)
    .action(async (options: { json: boolean }) => {
      await withClients(loadConfig(), 'reads', async (clients) => {
        const now = new Date();
        const views = (await clients.list(OPERATOR)).map((client) => viewClient(client, now));
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
            previousSecret: 'PREVIOUS SECRET UNTIL',
            redirectUris: 'REDIRECT URIS',
          },
          views.map((view) => ({
            name: view.name,
            type: view.type,
            accounts: view.accounts,
            grants: view.grants.join(','),
            previousSecret: view.previousSecretExpiresAt ?? '-',
            redirectUris: view.redirectUris.join(' ') || '-',
          })),
        );
      });
    });

  clientCommand('client:show', 'Print an OAuth client in MongoDB as JSON (never a secret)')
    .argument('<name>', 'the client_id')
    .action(async (name: string) => {
      await withClients(loadConfig(), 'reads', async (clients) => {
        printClient({ client: await clients.view(OPERATOR, name) });
      });
    });

  clientCommand(
    'client:update',
    'Change the redirect URIs or the grants of an OAuth client in MongoDB (each given replaces the ' +
      'list) and print it as JSON',
  )
    .argument('<name>', 'the client_id')
    .addOption(redirectUriOption('the exact redirect URIs of the authorization code grant'))
    .addOption(new Option('--no-redirect-uris', 'no redirect URI at all').conflicts('redirectUri'))
    .addOption(grantOption('the grants the client may use'))
    .action(async (name: string, options: UpdateOptions) => {
      const redirectUris = options.redirectUris ? options.redirectUri : [];
      if (redirectUris === undefined && options.grant === undefined)
        throw new Error('nothing to change: give --redirect-uri, --no-redirect-uris or --grant');
      await withClients(loadConfig(), 'writes', async (clients) => {
        printClient(await clients.update(OPERATOR, name, { redirectUris, grants: options.grant }));
      });
    });

  clientCommand(
    'client:rotate-secret',
    'Give a confidential client in MongoDB a new secret and print the client as JSON with it, the ' +
      'only time it is shown; the secret before it is still accepted for the overlap',
  )
    .argument('<name>', 'the client_id')
    .addOption(
      new Option(
        '--overlap <seconds>',
        `how long the secret before it is still accepted, 0 to ${MAX_SECRET_OVERLAP_SECONDS} seconds ` +
          `(0: it stops now; default ${DEFAULT_SECRET_OVERLAP_SECONDS})`,
      ).argParser(wholeNumber),
    )
    .action(async (name: string, options: { overlap?: number | string }) => {
      await withClients(loadConfig(), 'writes', async (clients) => {
        printClient(
          await clients.update(OPERATOR, name, {
            rotateSecret: true,
            previousSecretOverlapSeconds: options.overlap,
          }),
        );
      });
    });

  clientCommand(
    'client:retire-secret',
    'End the overlap of the last rotation now: only the current secret of the client is accepted ' +
      'from then on; prints the client as JSON',
  )
    .argument('<name>', 'the client_id')
    .action(async (name: string) => {
      await withClients(loadConfig(), 'writes', async (clients) => {
        printClient(await clients.update(OPERATOR, name, { retirePreviousSecret: true }));
      });
    });

  clientCommand(
    'client:delete',
    'Delete an OAuth client from MongoDB; its refresh tokens and codes are refused from then on',
  )
    .argument('<name>', 'the client_id')
    .action(async (name: string) => {
      await withClients(loadConfig(), 'writes', async (clients) => {
        await clients.remove(OPERATOR, name);
        console.log(`Deleted client ${name}`);
      });
    });
};
