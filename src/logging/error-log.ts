import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';

/**
 * Paths pino blanks in every line. The log is written with the error and a few request facts
 * only, never headers or bodies; these paths are the second line of defence.
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
 * never rotates or removes. Each line is a single append (O_APPEND), so several workers can
 * write the same day's file without interleaving lines.
 */
export function createErrorLogger(options: { logDir: string; service: string; now?: () => Date }): Logger {
  const now = options.now ?? (() => new Date());
  mkdirSync(options.logDir, { recursive: true });
  const destination = {
    write(line: string) {
      appendFileSync(errorLogPath(options.logDir, now()), line);
    },
  };
  return pino(
    {
      name: options.service,
      level: 'error',
      base: { service: options.service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}

/** Start, stop and warning messages of the processes, as JSON lines on standard output. */
export function createProcessLogger(service: string): Logger {
  return pino({
    name: service,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
