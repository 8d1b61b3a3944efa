import { Option } from 'commander';
import { checkNewAccount } from '../../accounts/input.ts';
import { ADMIN_ROLES, type AdminRole } from '../../accounts/model.ts';
import { OPERATOR } from '../../caller.ts';
import { checked, kebabOption } from '../checked.ts';
import { withOperatorServices } from '../operator-services.ts';
import type { RegisterCommand } from './register-command.ts';

interface AdminCreateOptions {
  identity: string;
  firstName?: string;
  lastName?: string;
  role: AdminRole;
}

/**
 * `admin:create`: a replacement administrator (docs/operations.md). The password never comes from
 * an argument (it would sit in the shell history and the process list): it is asked on the
 * terminal without echo, or read from standard input when that is not a terminal
 * (`printf '%s' "$PASSWORD" | npm run cli -- admin:create --identity ops`). Prints the new id.
 */
export const registerAdminCreate: RegisterCommand = (program, loadConfig) => {
  program
    .command('admin:create')
    .description(
      'Create an administrator account in MongoDB; the password is asked on the terminal (no echo) ' +
        'or read from standard input, never from an argument. Prints the new id.',
    )
    .requiredOption('--identity <name>', 'sign-in name: letters, digits and . _ @ + -')
    .option('--first-name <name>', 'first name')
    .option('--last-name <name>', 'last name')
    .addOption(
      new Option('--role <role>', 'admin, or superuser (may also create and delete admins)')
        .choices(ADMIN_ROLES)
        .default('admin'),
    )
    .action(async (options: AdminCreateOptions) => {
      const password = await readPassword();
      if (password === '') throw new Error(NO_PASSWORD);
      // The rules of POST /admins, checked before anything is opened; the service takes the
      // accepted account as it is.
      const account = await checked(
        () =>
          checkNewAccount('admin', {
            identity: options.identity,
            ...(options.firstName === undefined ? {} : { firstName: options.firstName }),
            ...(options.lastName === undefined ? {} : { lastName: options.lastName }),
            password,
            status: 'active',
            roles: [options.role],
          }),
        (field) => (field === 'password' ? field : kebabOption(field)),
      );

      const accounts = { what: 'accounts', api: 'POST /admins' };
      await withOperatorServices(loadConfig(), accounts, async (services) => {
        console.log((await services.accounts.admin.create(OPERATOR, account)).id);
      });
    });
};

const NO_PASSWORD =
  'no password was given: type it at the prompt, or pipe it on standard input ' +
  `(printf '%s' "$PASSWORD" | npm run cli -- admin:create ...)`;

async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await promptHidden('Password: ');
    const second = await promptHidden('Repeat the password: ');
    if (first !== second) throw new Error('password: the two entries differ');
    return first;
  }
  let input = '';
  for await (const chunk of process.stdin) {
    input += String(chunk);
    if (input.length > 64 * 1024) throw new Error('password: standard input is too long');
  }
  // The first line: `echo secret |` and `printf secret |` both work.
  return input.split(/\r?\n/, 1)[0] ?? '';
}

/** Reads one line from the terminal in raw mode, echoing nothing; prompts go to stderr. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish();
        if (char === '\u0003') return finish(new Error('cancelled'));
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else value += char;
      }
    };
    stdin.on('data', onData);
  });
}
