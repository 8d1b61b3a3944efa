import { join } from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Forbidden, Problem } from '../errors.ts';
import { appendLine } from '../logging/append-line.ts';
import { scrubSecrets, scrubText } from '../logging/redact.ts';
import type { ClientAddress } from './client-address.ts';
import { createReportingTokens } from './tokens.ts';
import { createClientWhitelist } from './whitelist.ts';

/** Every accepted report is appended to this one file under the log directory, without a size cap. */
export const ERROR_REPORT_LOG_FILE = 'error-report-endpoint-log.log';
export const MAX_MESSAGE_LENGTH = 10_000;

/** The body of `POST /error-report`. Anything beyond the message belongs in `context`. */
export const ErrorReportSchema = Type.Object(
  {
    message: Type.String({
      minLength: 1,
      maxLength: MAX_MESSAGE_LENGTH,
      description: 'What went wrong, as the client saw it',
    }),
    context: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'Free-form details: URL, user agent, stack, release, ...',
      }),
    ),
  },
  { $id: 'ErrorReport', additionalProperties: false },
);
export type ErrorReport = Static<typeof ErrorReportSchema>;

/** No `Error-Reporting-Token` header. RFC 9110 §15.5.2: a 401 names the scheme to use. */
export class ErrorReportingTokenRequired extends Problem {
  constructor() {
    super(401, 'The Error-Reporting-Token header is required', {
      headers: { 'WWW-Authenticate': 'Error-Reporting-Token' },
    });
  }
}

export class ErrorReportingDisabled extends Forbidden {
  constructor() {
    super('Error reporting is not configured on this server');
  }
}

export class ClientNotWhitelisted extends Forbidden {
  constructor() {
    super('This client is not allowed to report errors');
  }
}

export class InvalidErrorReportingToken extends Forbidden {
  constructor() {
    super('The Error-Reporting-Token is not valid');
  }
}

/** Who sends a report: the presented token, the `Origin` header and the resolved client address. */
export interface ErrorReportSender {
  token: string | undefined;
  origin: string | undefined;
  client: ClientAddress;
}

export interface ErrorReportReceiver {
  /** Checks the sender and appends the report, or throws the Problem that refuses it. */
  receive(sender: ErrorReportSender, report: ErrorReport): void;
}

/**
 * The error-report endpoint's guard and log. A report is accepted when error reporting is
 * configured, the sender presents a configured token and the client is on the IP whitelist or
 * its `Origin` host on the domain whitelist. Nothing is written for a refused report.
 *
 * The whitelist is checked before the token, so a client outside it learns nothing about
 * tokens. Throws InvalidWhitelistEntry for a malformed IP whitelist entry.
 */
export function createErrorReportReceiver(options: {
  tokens: ReadonlyMap<string, string>;
  ipWhitelist: readonly string[];
  domainWhitelist: readonly string[];
  logDir: string;
  now?: () => Date;
}): ErrorReportReceiver {
  const now = options.now ?? (() => new Date());
  const tokens = createReportingTokens(options.tokens);
  const whitelist = createClientWhitelist({
    addresses: options.ipWhitelist,
    domains: options.domainWhitelist,
  });
  const logFile = join(options.logDir, ERROR_REPORT_LOG_FILE);

  return {
    receive(sender, report) {
      if (!tokens.configured) throw new ErrorReportingDisabled();
      if (!sender.token) throw new ErrorReportingTokenRequired();
      if (!whitelist.admitsAddress(sender.client.address) && !whitelist.admitsOrigin(sender.origin)) {
        throw new ClientNotWhitelisted();
      }
      const tokenAlias = tokens.aliasOf(sender.token);
      if (tokenAlias === undefined) throw new InvalidErrorReportingToken();
      const record = {
        time: now().toISOString(),
        tokenAlias,
        clientAddress: sender.client.address,
        // The headers a client can set itself: worth knowing when reading a suspicious report.
        addressSource: sender.client.source,
        origin: sender.origin,
        // A report is the client's text; secrets it happens to carry stay out of the log.
        message: scrubText(report.message),
        context: report.context === undefined ? undefined : scrubSecrets(report.context),
      };
      appendLine(logFile, `${tokens.blankIn(JSON.stringify(record))}\n`);
    },
  };
}
