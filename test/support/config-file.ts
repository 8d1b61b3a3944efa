import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A CONFIG_FILE holding `contents`, in a directory of its own; returns its path. */
export function configFile(contents: object): string {
  const file = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'config.json');
  writeFileSync(file, JSON.stringify(contents));
  return file;
}
