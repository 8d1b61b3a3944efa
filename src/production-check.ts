import { join } from 'node:path';
import type { PasswordHasher } from './accounts/password-hasher.ts';
import type { Config } from './config/config.ts';
import { SETTINGS } from './config/settings.ts';
import { defaultsStillInPlace } from './seed.ts';
import type { Stores } from './stores/stores.ts';

/**
 * What a production deployment should not have, each said as what it means. A production
 * start names them all in one log entry, and `config:check` prints the same list (exit 1 when
 * it is not empty), so a deploy pipeline can stop on it.
 */
export async function notForProduction(
  config: Config,
  stores: Stores,
  passwords: PasswordHasher,
): Promise<string[]> {
  return [...settingsNotForProduction(config), ...(await defaultsStillInPlace(stores, passwords))];
}

/** The documented example tokens (.env.example), which anyone can read. */
const EXAMPLE_REPORT_TOKENS = new Set(
  SETTINGS.ERROR_REPORT_TOKENS.value
    .parse(SETTINGS.ERROR_REPORT_TOKENS.example, 'ERROR_REPORT_TOKENS')
    .values(),
);

/** What the settings alone decide. */
function settingsNotForProduction(config: Config): string[] {
  const found: string[] = [];
  if (!config.smtpUrl)
    found.push(
      `SMTP_URL is unset: activation, password reset and address change mail is written to files in ${join(config.logDir, 'mail')}, never sent`,
    );
  if (!config.mongodbUrl)
    found.push(
      'MONGODB_URL is unset: accounts, OAuth clients and scopes live in memory, are lost at exit, and come back seeded with their publicly known secrets at every start',
    );
  if (!config.redisUrl)
    found.push('REDIS_URL is unset: refresh tokens live in memory, and every session ends at exit');
  if (new URL(config.appUrl).protocol === 'http:')
    found.push(
      'APP_URL is http://: the issuer of every token and the base of mailed links is a plain-HTTP address',
    );
  for (const [alias, token] of config.errorReport.tokens)
    if (EXAMPLE_REPORT_TOKENS.has(token))
      found.push(`ERROR_REPORT_TOKENS: the token of "${alias}" is the documented example`);
  return found;
}
