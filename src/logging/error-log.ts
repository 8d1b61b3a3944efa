import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { appendLine } from './append-line.ts';
import { REDACTED, scrubSecrets, scrubText } from './redact.ts';

/**
 * Paths pino blanks in every line. The service logs an error with a few request facts only,
 * never headers or bodies; these paths and the scrub of `redact.ts` (which also reaches
 * secrets nested deeper inside a thrown error) are the lines of defence behind that.
 */
export const REDACTED_PATHS = [
  'password',
  '*.password',
  'client_secret',
  '*.client_secret',
  'refresh_token',
  '*.refresh_token',
  'access_token',
  '*.access_token',
  'token',
  '*.token',
  'headers.authorization',
  '*.headers.authorization',
  'headers["error-reporting-token"]',
  '*.headers["error-reporting-token"]',
];

/** `log/error-log-YYYY-MM-DD.log` for the UTC day of `now`. */
export function errorLogPath(logDir: string, now: Date): string {
  return join(logDir, `error-log-${now.toISOString().slice(0, 10)}.log`);
}

/**
 * The error log: one JSON line per unexpected error, in one file per UTC day that the service
 * never rotates or removes. The logger is named after the service; each line carries the
 * host and pid, so lines of several containers sharing the log volume can be told apart.
 *
 * Lines are appended as `append-line.ts` says: several workers and containers can write the
 * same day's file without interleaving lines.
 */
export function createErrorLogger(options: { logDir: string; service: string; now?: () => Date }): Logger {
  const now = options.now ?? (() => new Date());
  mkdirSync(options.logDir, { recursive: true });
  return pino(
    {
      name: options.service,
      level: 'error',
      base: { service: options.service, pid: process.pid, hostname: hostname() },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        // Turns errors into plain data and blanks secrets at any depth, before pino serializes.
        log: (object) => scrubSecrets(object) as Record<string, unknown>,
      },
      hooks: {
        // The message is text outside the logged object: scrub it too. Without one, pino would
        // take the error's raw message; take the scrubbed one instead.
        logMethod(args, method) {
          const [first, second, ...rest] = args as unknown[];
          if (typeof first === 'string')
            return method.apply(this, [scrubText(first), ...(args.slice(1) as [])]);
          const message = typeof second === 'string' ? second : messageOf(first);
          return method.apply(this, [first, scrubText(message), ...(rest as [])]);
        },
      },
      // The error is already plain data (see `log` above); pino's serializer would re-wrap it.
      serializers: { err: (error: unknown) => error },
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
    },
    { write: (line: string) => appendOrComplain(errorLogPath(options.logDir, now()), line) },
  );
}

/** The message pino would take: that of the error logged alone or under `err`. */
function messageOf(object: unknown): string {
  const error = object instanceof Error ? object : (object as { err?: unknown } | undefined)?.err;
  return error instanceof Error ? error.message : 'Unexpected error';
}

/**
 * A log that cannot be written must not take the worker down with it (the caller is already
 * handling a failure): the line goes to standard error instead.
 */
function appendOrComplain(path: string, line: string): void {
  try {
    appendLine(path, line);
  } catch (error) {
    process.stderr.write(`Cannot write ${path} (${(error as Error).message}); the line was: ${line}`);
  }
}

/** Start, stop and warning messages of the processes, as JSON lines on standard output. */
export function createProcessLogger(service: string): Logger {
  return pino({
    name: service,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
