import { readFileSync } from 'node:fs';
import { type Static, Type } from '@sinclair/typebox';
import type { Deprecation } from '../http/headers.ts';
import { compileValidator } from '../validation.ts';
import { type Config, ConfigError } from './config.ts';
import type { ValueKind } from './value-kinds.ts';

export const DEFAULT_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Permissions-Policy': 'interest-cohort=()',
};

/** How long browsers may cache a CORS preflight, seconds, unless CONFIG_FILE says otherwise. */
export const DEFAULT_CORS_MAX_AGE = 600;

/** `GET /` is deprecated as a demonstration of the feature, with a sunset far in the future. */
export const DEFAULT_DEPRECATIONS: Readonly<Record<string, { since: string; sunset: string; link: string }>> =
  {
    home: { since: '2025-01-01T00:00:00Z', sunset: '2099-12-31T23:59:59Z', link: '/#deprecation' },
  };

/** Browsers cap a cached preflight lower still (Chromium at 2 hours); beyond a day is a typo. */
export const MAX_CORS_MAX_AGE = 86_400;

/**
 * The members of CONFIG_FILE; docs/configuration.md describes them. Closed objects: a
 * misspelt member would otherwise be ignored without a word.
 */
const CONFIG_FILE_SCHEMA = Type.Object(
  {
    responseHeaders: Type.Optional(Type.Record(Type.String(), Type.Record(Type.String(), Type.String()))),
    cors: Type.Optional(
      Type.Object(
        { maxAge: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CORS_MAX_AGE })) },
        { additionalProperties: false },
      ),
    ),
    deprecations: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object(
          { since: Type.String(), sunset: Type.String(), link: Type.String() },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
type ConfigFile = Static<typeof CONFIG_FILE_SCHEMA>;
const configFileShape = compileValidator<ConfigFile>(CONFIG_FILE_SCHEMA);

export function responseHeaders(file: ConfigFile): Config['responseHeaders'] {
  for (const [route, headers] of Object.entries(file.responseHeaders ?? {})) {
    for (const [name, value] of Object.entries(headers)) {
      // RFC 9110 §5.1 token names and §5.5 field values: a bad one would fail every response.
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || !/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) {
        throw new ConfigError(
          'CONFIG_FILE',
          `responseHeaders.${route}.${name} must be a header name with a printable string value`,
        );
      }
    }
  }
  return { ...file.responseHeaders, '*': { ...DEFAULT_RESPONSE_HEADERS, ...file.responseHeaders?.['*'] } };
}

export function deprecations(
  raw: Record<string, { since: string; sunset: string; link: string }>,
  appUrl: string,
): Record<string, Deprecation> {
  const result: Record<string, Deprecation> = {};
  for (const [route, entry] of Object.entries(raw)) {
    const since = new Date(entry.since);
    const sunset = new Date(entry.sunset);
    if (Number.isNaN(since.getTime()) || Number.isNaN(sunset.getTime()) || sunset < since) {
      throw new ConfigError(
        'CONFIG_FILE',
        `deprecations.${route} needs valid dates with sunset not before since`,
      );
    }
    if (!URL.canParse(entry.link, `${appUrl}/`)) {
      throw new ConfigError('CONFIG_FILE', `deprecations.${route}.link must be a URL or a path`);
    }
    result[route] = { since, sunset, link: new URL(entry.link, `${appUrl}/`).href };
  }
  return result;
}

export function jsonFile(): ValueKind<ConfigFile> {
  return {
    accepts: 'the path of a file holding a JSON object',
    parse(path, name) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(readFileSync(path, 'utf8'));
      } catch (error) {
        throw new ConfigError(name, `cannot be read as JSON (${(error as Error).message})`);
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new ConfigError(name, 'must hold a JSON object');
      }
      const errors = configFileShape.errors(parsed);
      if (errors) {
        const [path, messages] = Object.entries(errors)[0] ?? ['', []];
        // The path is a JSON Pointer's: `/` and `~` in a member's name come escaped.
        const member = path.replaceAll('~1', '/').replaceAll('~0', '~');
        throw new ConfigError(name, `${member}: ${messages.join('; ')}`);
      }
      return parsed as ConfigFile;
    },
  };
}
