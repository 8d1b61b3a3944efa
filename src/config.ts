import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createClientWhitelist } from './error-report/whitelist.ts';

/**
 * Configuration, read from the environment once at start and validated there. Nothing else in
 * the service reads `process.env`: the composition root hands each part what it needs.
 */

export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

export const GRANT_TYPES = ['password', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

export interface Deprecation {
  /** When the route was (or will be) deprecated. */
  since: Date;
  sunset: Date;
  /** Where the sunset policy is described (RFC 8594 §6). */
  link: string;
}

export interface Config {
  port: number;
  host: string;
  workers: number;
  /** bcrypt threads per worker: the cores shared out between the workers. */
  hashThreads: number;
  /** How long a stopping worker lets in-flight requests finish. */
  shutdownGraceMs: number;
  appName: string;
  appVersion: string;
  appUrl: string;
  production: boolean;
  mongodbUrl: string | undefined;
  /** How long a start waits for MongoDB and Redis before giving up, ms. */
  backendStartupTimeoutMs: number;
  redisUrl: string | undefined;
  smtpUrl: string | undefined;
  keysDir: string;
  logDir: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  accessTokenAlg: SigningAlgorithm;
  grants: ReadonlySet<GrantType>;
  bcryptCost: number;
  bodyLimit: number;
  cors: { origins: readonly string[] | '*'; maxAge: number };
  mail: {
    /** Sender of every message. */
    from: string;
    /** Lifetime of an activation link, seconds. */
    activationTtl: number;
    /** Lifetime of a password reset link, seconds. */
    resetTtl: number;
  };
  errorReport: {
    /** Accepted `Error-Reporting-Token` values by alias (the alias is what the log records). */
    tokens: ReadonlyMap<string, string>;
    /** IP addresses or CIDR ranges. */
    ipWhitelist: readonly string[];
    /** Host names matched against the `Origin` header. */
    domainWhitelist: readonly string[];
  };
  /** Response headers per route name; `*` applies to every route. */
  responseHeaders: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Deprecations per route name. */
  deprecations: Readonly<Record<string, Deprecation>>;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Permissions-Policy': 'interest-cohort=()',
};

/** `GET /` is deprecated as a demonstration of the feature, with a sunset far in the future. */
const DEFAULT_DEPRECATIONS: Record<string, { since: string; sunset: string; link: string }> = {
  home: { since: '2025-01-01T00:00:00Z', sunset: '2099-12-31T23:59:59Z', link: '/#deprecation' },
};

/**
 * What describing the service takes (route:list, openapi:generate): names, URL, grants and
 * deprecations, and nothing of how it runs. It reads and checks only the variables behind
 * these, so a runtime setting that would stop the service does not stop a description.
 */
export type ServiceDescription = Pick<
  Config,
  'appName' | 'appVersion' | 'appUrl' | 'grants' | 'deprecations'
>;

type PackageInfo = { name: string; version: string };

export function loadServiceDescription(env: Env, packageInfo: PackageInfo): ServiceDescription {
  return serviceDescription(env, packageInfo, readConfigFile(env.CONFIG_FILE));
}

function serviceDescription(env: Env, packageInfo: PackageInfo, file: ConfigFile): ServiceDescription {
  const appUrl = url(env, 'APP_URL', 'http://localhost:8080').replace(/\/+$/, '');
  return {
    appName: env.APP_NAME || packageInfo.name,
    appVersion: env.APP_VERSION || packageInfo.version,
    appUrl,
    grants: grants(env),
    deprecations: deprecations({ ...DEFAULT_DEPRECATIONS, ...file.deprecations }, appUrl),
  };
}

export function loadConfig(env: Env, packageInfo: PackageInfo): Config {
  const embedded = !env.MONGODB_URL || !env.REDIS_URL;
  const file = readConfigFile(env.CONFIG_FILE);
  const description = serviceDescription(env, packageInfo, file);
  const corsOrigins = list(env.CORS_ORIGINS);
  // Memory stores cannot be shared between processes, so the embedded mode runs one worker.
  const workers = embedded ? 1 : integer(env, 'WORKERS', availableParallelism(), 1, 256);
  return {
    ...description,
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '0.0.0.0',
    workers,
    hashThreads: Math.max(1, Math.floor(availableParallelism() / workers)),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE', 10, 0, 3600) * 1000,
    production: env.NODE_ENV === 'production',
    mongodbUrl: optionalUrl(env, 'MONGODB_URL', ['mongodb:', 'mongodb+srv:']),
    redisUrl: optionalUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    backendStartupTimeoutMs: integer(env, 'BACKEND_STARTUP_TIMEOUT', 30, 1, 3600) * 1000,
    smtpUrl: optionalUrl(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    keysDir: env.KEYS_DIR || 'keys',
    logDir: env.LOG_DIR || 'log',
    accessTokenTtl: integer(env, 'ACCESS_TOKEN_TTL', 86400, 1, 31_536_000),
    refreshTokenTtl: integer(env, 'REFRESH_TOKEN_TTL', 2_592_000, 1, 31_536_000),
    accessTokenAlg: oneOf(env, 'ACCESS_TOKEN_ALG', SIGNING_ALGORITHMS, 'RS256'),
    bcryptCost: integer(env, 'BCRYPT_COST', 10, 4, 31),
    bodyLimit: byteSize(env, 'BODY_LIMIT', '1mb'),
    mail: {
      from: env.MAIL_FROM || `${description.appName} <no-reply@${new URL(description.appUrl).hostname}>`,
      activationTtl: integer(env, 'ACTIVATION_TTL', 86_400, 60, 31_536_000),
      resetTtl: integer(env, 'RESET_PASSWORD_TTL', 3_600, 60, 31_536_000),
    },
    errorReport: {
      tokens: errorReportTokens(env.ERROR_REPORT_TOKENS),
      ipWhitelist: ipWhitelist(env.ERROR_REPORT_IP_WHITELIST),
      domainWhitelist: list(env.ERROR_REPORT_DOMAIN_WHITELIST).map((host) => host.toLowerCase()),
    },
    cors: { origins: corsOrigins.includes('*') ? '*' : corsOrigins, maxAge: file.cors?.maxAge ?? 600 },
    responseHeaders: responseHeaders(file),
  };
}

interface ConfigFile {
  responseHeaders?: Record<string, Record<string, string>>;
  cors?: { maxAge?: number };
  deprecations?: Record<string, { since: string; sunset: string; link: string }>;
}

function readConfigFile(path: string | undefined): ConfigFile {
  if (!path) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError('CONFIG_FILE', `cannot be read as JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('CONFIG_FILE', 'must hold a JSON object');
  }
  return parsed as ConfigFile;
}

function responseHeaders(file: ConfigFile): Config['responseHeaders'] {
  for (const [route, headers] of Object.entries(file.responseHeaders ?? {})) {
    for (const [name, value] of Object.entries(headers)) {
      // RFC 9110 §5.1 token names and §5.5 field values: a bad one would fail every response.
      if (
        typeof value !== 'string' ||
        !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) ||
        !/^[\t\x20-\x7e\x80-\xff]*$/.test(value)
      ) {
        throw new ConfigError(
          'CONFIG_FILE',
          `responseHeaders.${route}.${name} must be a header name with a printable string value`,
        );
      }
    }
  }
  return { ...file.responseHeaders, '*': { ...DEFAULT_RESPONSE_HEADERS, ...file.responseHeaders?.['*'] } };
}

function deprecations(
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
    result[route] = { since, sunset, link: new URL(entry.link, `${appUrl}/`).href };
  }
  return result;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  }
  return raw;
}

function optionalUrl(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  let protocol: string;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    // Never echo the value: connection URLs carry passwords.
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(protocol)) throw new ConfigError(name, `must use ${protocols.join(' or ')}`);
  return raw;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function grants(env: Env): ReadonlySet<GrantType> {
  const raw = env.OAUTH_GRANTS;
  if (raw === undefined) return new Set(GRANT_TYPES);
  const names = list(raw);
  for (const name of names) {
    if (!(GRANT_TYPES as readonly string[]).includes(name)) {
      throw new ConfigError(
        'OAUTH_GRANTS',
        `names an unknown grant "${name}" (known: ${GRANT_TYPES.join(', ')})`,
      );
    }
  }
  return new Set(names as GrantType[]);
}

/**
 * `ERROR_REPORT_TOKENS`: a comma list of `alias:token` pairs (a bare token gets the alias
 * `token-N`). Tokens must be long enough not to be guessed.
 */
function errorReportTokens(raw: string | undefined): ReadonlyMap<string, string> {
  const tokens = new Map<string, string>();
  list(raw).forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const alias = colon > 0 ? entry.slice(0, colon) : `token-${index + 1}`;
    const token = colon > 0 ? entry.slice(colon + 1) : entry;
    if (token.length < 16)
      throw new ConfigError(
        'ERROR_REPORT_TOKENS',
        `entry ${index + 1} has a token shorter than 16 characters`,
      );
    if (tokens.has(alias)) throw new ConfigError('ERROR_REPORT_TOKENS', `alias "${alias}" is used twice`);
    tokens.set(alias, token);
  });
  return tokens;
}

/** IP addresses and CIDR ranges, checked here so a typo stops the start naming the variable. */
function ipWhitelist(raw: string | undefined): string[] {
  const entries = list(raw);
  try {
    createClientWhitelist({ addresses: entries, domains: [] });
  } catch (error) {
    throw new ConfigError('ERROR_REPORT_IP_WHITELIST', `is invalid: ${(error as Error).message}`);
  }
  return entries;
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

function byteSize(env: Env, name: string, fallback: string): number {
  const raw = (env[name] || fallback).trim().toLowerCase();
  const match = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(raw);
  const value = match ? Number(match[1]) * (UNITS[match[2] ?? 'b'] ?? 1) : 0;
  if (!match || value < 1) throw new ConfigError(name, `must be a size such as 100kb or 1mb, got "${raw}"`);
  return value;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
