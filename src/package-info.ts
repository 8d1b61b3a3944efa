import { readFileSync } from 'node:fs';

/** Name and version from package.json: the defaults of APP_NAME and APP_VERSION. */
export function readPackageInfo(): { name: string; version: string } {
  const raw = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
  return { name: String(raw.name), version: String(raw.version) };
}
