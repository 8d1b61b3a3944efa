import { readFileSync } from 'node:fs';
import { type Static, Type } from '@sinclair/typebox';
import type { Deprecation } from '../http/headers.ts';
import { compileValidator } from '../validation.ts';
import { type Config, ConfigError } from './config.ts';
import type { ValueKind } from './setting.ts';

type DeprecationEntry = { since: string; sunset: string; link: string };

/** What holds where CONFIG_FILE says nothing; the entry of CONFIG_FILE in the table sets it. */
export interface ConfigFileDefaults {
  /** The headers of every route, under those the file adds. */
  responseHeaders: { '*': Readonly<Record<string, string>> };
  /** How long browsers may cache a CORS preflight, seconds. */
  cors: { maxAge: number };
  deprecations: Readonly<Record<string, DeprecationEntry>>;
}

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

/**
 * Response headers CONFIG_FILE may set on no route, by lower-cased name, with the reason. A
 * static value of a framing or hop-by-hop header (RFC 9110 §7.6.1, RFC 9112 §6) makes every
 * answer lie about its own length or connection and desynchronises the connections a proxy
 * keeps open; the others are set by the service itself, answer by answer, or by another part
 * of the configuration. (Headers a single route sets, such as `Cache-Control` on the token
 * routes, are refused for that route where routes and configuration meet, in app.ts.)
 */
const UNCONFIGURABLE_HEADERS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    [
      'connection',
      'keep-alive',
      'proxy-connection',
      'transfer-encoding',
      'te',
      'trailer',
      'upgrade',
      'http2-settings',
      'content-length',
      'content-encoding',
      'content-range',
      'host',
      'date',
    ].map((name) => [name, 'frames the message or the connection, which only the HTTP server does']),
  ),
  'content-type': 'is set by the service for each answer',
  location: 'is set by the service for each answer',
  'www-authenticate': 'is set by the service for each answer',
  allow: 'is set by the service for each answer',
  'set-cookie': 'is not for a static value: the service sets no cookie',
  deprecation: 'comes from the deprecations member',
  sunset: 'comes from the deprecations member',
  link: 'comes from the deprecations member',
};

/** Why a configured header cannot be set on any route, or undefined when it can. */
function whyUnconfigurable(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (lower.startsWith('proxy-')) return 'is a proxy header, which only proxies set';
  if (lower.startsWith('access-control-')) return 'comes from CORS_ORIGINS and the cors member';
  return Object.hasOwn(UNCONFIGURABLE_HEADERS, lower) ? UNCONFIGURABLE_HEADERS[lower] : undefined;
}

export function responseHeaders(file: ConfigFile, defaults: ConfigFileDefaults): Config['responseHeaders'] {
  for (const [route, headers] of Object.entries(file.responseHeaders ?? {})) {
    for (const [name, value] of Object.entries(headers)) {
      // RFC 9110 §5.1 token names and §5.5 field values: a bad one would fail every response.
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || !/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) {
        throw new ConfigError(
          'CONFIG_FILE',
          `responseHeaders.${route}.${name} must be a header name with a printable string value`,
        );
      }
      const reason = whyUnconfigurable(name);
      if (reason !== undefined)
        throw new ConfigError('CONFIG_FILE', `responseHeaders.${route}.${name}: this header ${reason}`);
    }
  }
  return {
    ...file.responseHeaders,
    '*': { ...defaults.responseHeaders['*'], ...file.responseHeaders?.['*'] },
  };
}

export function deprecations(
  raw: Record<string, DeprecationEntry>,
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

/** The CONFIG_FILE: a JSON object of the members above, and the `defaults` that hold without them. */
export function configFile(
  defaults: ConfigFileDefaults,
): ValueKind<ConfigFile> & { defaults: ConfigFileDefaults } {
  return {
    accepts: 'the path of a file holding a JSON object',
    defaults,
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
