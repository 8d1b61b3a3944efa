import { randomBytes } from 'node:crypto';
import { Argument } from 'commander';
import type { RegisterCommand } from './register-command.ts';

/** 256 random bits, base64url: 43 characters with no `,` or `:` to clash with ERROR_REPORT_TOKENS. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

export const registerTokenGenerate: RegisterCommand = (program) => {
  program
    .command('token:generate')
    .description('Print a new random token (256 bits) and where to configure it')
    .addArgument(new Argument('<kind>', 'what the token is for').choices(['error-reporting']))
    .option('--alias <alias>', 'the name the error report log records for this token', 'default')
    .action((_kind: string, options: { alias: string }) => {
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(options.alias)) {
        throw new Error(`--alias must be 1 to 64 letters, digits, ".", "_" or "-", got "${options.alias}"`);
      }
      const token = generateToken();
      console.log(token);
      console.log('');
      console.log(
        'Configure it in the service environment (append to any tokens already there, comma-separated):',
      );
      console.log(`  ERROR_REPORT_TOKENS=${options.alias}:${token}`);
      console.log(
        'and whitelist the reporting clients in ERROR_REPORT_IP_WHITELIST or ERROR_REPORT_DOMAIN_WHITELIST.',
      );
      console.log('Clients send the token in the Error-Reporting-Token header of POST /error-report.');
    });
};
