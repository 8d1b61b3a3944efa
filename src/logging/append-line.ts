import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Appends one line to a log file, the one way every log of the service is written.
 *
 * The line is one `write(2)` to a file opened with O_APPEND, which the kernel performs as a
 * whole against other appenders on a local file system: several workers and containers can
 * write one file without interleaving lines. (Not so on NFS: keep the log directory local.)
 * A missing directory (removed while the service runs) is created again; any other failure
 * is thrown, and the caller decides what a lost line means for it.
 */
export function appendLine(path: string, line: string): void {
  try {
    appendFileSync(path, line, { mode: 0o640 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, line, { mode: 0o640 });
  }
}
