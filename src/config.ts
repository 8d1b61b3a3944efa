import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { type Static, Type } from '@sinclair/typebox';
import { MongoClient } from 'mongodb';
import { createClientWhitelist } from './error-report/whitelist.ts';
import { DEFAULT_ACCOUNT_CACHE_SIZE } from './stores/cache/cached-stores.ts';
import { parseRedisUrl } from './stores/redis/url.ts';
import { GRANT_TYPES, type GrantType } from './stores/types.ts';
import { compileValidator } from './validation.ts';

/**
 * Configuration, read from the environment once at start and validated there. Nothing else in
 * the service reads `process.env`: the composition root hands each part what it needs.
 *
 * SETTINGS is the one list of variables: `loadConfig` reads and checks every one of them, and
 * `npm run cli -- config:docs` writes docs/configuration.md and .env.example from it. A new
 * setting is one entry there, plus the field of Config that carries it.
 */

export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

export { GRANT_TYPES, type GrantType };

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
  /** Accounts each process keeps in memory when both backends are set. */
  accountCacheSize: number;
  redisUrl: string | undefined;
  /** How many Redis replicas confirm each refresh-token change before it is answered, and how fast. */
  redisReplicaAcks: { replicas: number; timeoutMs: number };
  smtpUrl: string | undefined;
  keysDir: string;
  logDir: string;
  accessTokenTtl: number;
  authorizationCodeTtl: number;
  refreshTokenTtl: number;
  /** How long the refresh token a rotation replaced is answered with its successor; 0 for never. */
  refreshTokenRetrySeconds: number;
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

/** How a variable's text becomes a value; `accepts` says so in the documentation. */
export interface ValueKind<T> {
  accepts: string;
  /** Throws ConfigError naming the variable when the text is not a value of this kind. */
  parse(raw: string, name: string): T;
  /** An empty value is a value of its own (the empty list) rather than "unset". */
  emptyIsValue?: boolean;
}

/** The sections of docs/configuration.md, in order. */
export const SECTIONS = {
  service: 'The service',
  storage: 'Storage',
  oauth: 'OAuth and tokens',
  accounts: 'Accounts and mail',
  http: 'HTTP',
  errorReport: 'Error reporting',
  files: 'Files',
} as const;
export type Section = keyof typeof SECTIONS;

/** One environment variable: how it is read, and what the documentation says about it. */
export interface Setting<T = unknown> {
  section: Section;
  /** One line: what the variable sets. Markdown, no links (it is also a comment in .env.example). */
  meaning: string;
  value: ValueKind<T>;
  /** The text read when the variable is unset (or empty); documented as the default. */
  default?: string;
  /** What leaving the variable unset means, documented instead of a plain default. */
  unset?: string;
  /** More for the documentation, Markdown. */
  notes?: string;
  /** A value to show, in the documentation and in .env.example. */
  example?: string;
  /** Its line in .env.example (the compose deployment): set to the example, or commented out. */
  envFile?: 'set' | 'commented';
  /** Read by route:list and openapi:generate, which describe the service without running it. */
  describesService?: true;
}

const code = (text: string) => `\`${text}\``;

/**
 * The longest retry window: time for a client's retries with back-off through a Redis
 * failover; longer only keeps a replaced token redeemable after its client has given up.
 */
const MAX_REFRESH_TOKEN_RETRY_SECONDS = 300;
/**
 * A write may wait for two WAITs back to back (redis/writes.ts): both within the 2 s command
 * timeout of redis/connect.ts, with time left for the writes themselves.
 */
const MAX_REPLICA_ACK_TIMEOUT_MS = 900;

export const SETTINGS = {
  PORT: {
    section: 'service',
    meaning: 'Port the HTTP workers listen on.',
    default: '8080',
    value: integer(0, 65535),
  },
  HOST: {
    section: 'service',
    meaning: 'Address the HTTP workers listen on.',
    default: '0.0.0.0',
    value: text('an IP address or host name'),
  },
  WORKERS: {
    section: 'service',
    meaning: 'Number of HTTP worker processes.',
    unset: 'one per CPU; always 1 unless both `MONGODB_URL` and `REDIS_URL` are set',
    notes:
      'Memory stores cannot be shared between processes, so without both backends one worker runs ' +
      'and the start says so. Each worker gets CPU count ÷ `WORKERS` bcrypt threads. ' +
      '`docker-compose.yml` sets it to `APP_CPUS`, the CPU limit of each app container.',
    example: '2',
    value: integer(1, 256),
  },
  APP_NAME: {
    section: 'service',
    meaning: 'Name returned by `GET /`; also the `service` of log lines and the sender name of mail.',
    unset: 'the `name` in package.json',
    describesService: true,
    value: text('any text'),
  },
  APP_VERSION: {
    section: 'service',
    meaning: 'Version returned by `GET /` and written into the OpenAPI document.',
    unset: 'the `version` in package.json',
    describesService: true,
    value: text('any text'),
  },
  APP_URL: {
    section: 'service',
    meaning: 'Public base URL: `iss` and `aud` of access tokens, base of mail links, OpenAPI `servers[0]`.',
    default: 'http://localhost:8080',
    notes:
      'A trailing `/` is dropped. Behind nginx it is the `https://` address clients use; changing ' +
      'it makes every access token already issued invalid (its `iss` and `aud` no longer match).',
    example: 'https://localhost',
    envFile: 'set',
    describesService: true,
    value: httpUrl(),
  },
  NODE_ENV: {
    section: 'service',
    meaning: 'Set to `production`, every start warns about each publicly known seed secret still in place.',
    unset: 'no warnings',
    example: 'production',
    envFile: 'set',
    value: text('any text; only `production` has an effect'),
  },
  SHUTDOWN_GRACE: {
    section: 'service',
    meaning: 'Seconds a stopping worker lets in-flight requests finish.',
    default: '10',
    notes:
      'Keep it below the time the container manager waits (`stop_grace_period: 30s` in docker-compose.yml).',
    envFile: 'commented',
    value: integer(0, 3600),
  },
  MONGODB_URL: {
    section: 'storage',
    meaning: 'MongoDB for accounts, OAuth clients, scopes and mailed links; the database is the URL path.',
    unset: 'kept in memory, lost at exit',
    notes:
      'Any MongoDB connection string, replica sets included. Driver options in its query win over ' +
      'the [connection defaults](#connections-to-mongodb-and-redis).',
    example: 'mongodb://user:password@mongo:27017/tokenservice?authSource=admin',
    envFile: 'commented',
    value: mongodbUrl(),
  },
  REDIS_URL: {
    section: 'storage',
    meaning: 'Redis for refresh tokens and the authorization code flow (sign-in forms, codes).',
    unset: 'kept in memory, lost at exit',
    notes:
      'One server: `redis://[[user]:password@]host[:port][/db]` (`rediss://` over TLS). Sentinel: ' +
      '`redis+sentinel://[:password@]host1:26379,host2:26379/<master-name>[/<db>]`, which follows ' +
      'failovers by itself. Redis Cluster: `redis+cluster://[:password@]host1:7000,host2:7001` (any ' +
      'of its nodes). The password is that of the Redis servers; Sentinels are asked without one. ' +
      'No query options: the [connection defaults](#connections-to-mongodb-and-redis) are not ' +
      'for overriding.',
    example: 'redis://:password@redis:6379',
    envFile: 'commented',
    value: redisUrl(),
  },
  REDIS_MIN_REPLICA_ACKS: {
    section: 'storage',
    meaning:
      'Replicas that must have a refresh-token change (a sign-in, a rotation, a revocation) before it ' +
      'is answered; one they do not confirm in time is answered 503, and the client retries.',
    unset: '1 when `REDIS_URL` names Sentinels (`redis+sentinel://`), otherwise 0',
    notes:
      'Redis `WAIT`: a refresh answered 200 survives the loss of the primary. With one replica, ' +
      'refreshes and sign-ins answer 503 while it is down: [replicas](operations.md#redis-replicas). ' +
      'Not with `redis+cluster://`, whose writes go to many primaries.',
    value: integer(0, 16),
  },
  REDIS_REPLICA_ACK_TIMEOUT_MS: {
    section: 'storage',
    meaning: 'Milliseconds a refresh-token change waits for `REDIS_MIN_REPLICA_ACKS` replicas.',
    default: '500',
    notes: `At most ${MAX_REPLICA_ACK_TIMEOUT_MS}: two waits back to back must end before Redis commands time out (2 s).`,
    value: integer(1, MAX_REPLICA_ACK_TIMEOUT_MS),
  },
  ACCOUNT_CACHE_SIZE: {
    section: 'storage',
    meaning:
      'Accounts each process keeps in memory for authentication when both `MONGODB_URL` and `REDIS_URL` are set.',
    default: String(DEFAULT_ACCOUNT_CACHE_SIZE),
    notes:
      'The least recently used account goes first. Every account write reaches every process through ' +
      'Redis, and a process that cannot hear Redis reads MongoDB instead: [caches](operations.md#caches).',
    value: integer(1, 10_000_000),
  },
  BACKEND_STARTUP_TIMEOUT: {
    section: 'storage',
    meaning: 'Seconds a start keeps retrying an unreachable MongoDB or Redis before it exits 1.',
    default: '30',
    value: integer(1, 3600),
  },
  OAUTH_GRANTS: {
    section: 'oauth',
    meaning: 'Enabled grants; a grant left out answers `unsupported_grant_type`.',
    default: GRANT_TYPES.join(','),
    describesService: true,
    value: grantList(),
  },
  AUTHORIZATION_CODE_TTL: {
    section: 'oauth',
    meaning:
      'Lifetime of an authorization code, seconds: the time between the sign-in and the token request.',
    default: '60',
    notes: 'RFC 6749 §4.1.2 recommends at most 10 minutes; the code is used once in any case.',
    envFile: 'commented',
    value: integer(1, 600),
  },
  ACCESS_TOKEN_TTL: {
    section: 'oauth',
    meaning: 'Lifetime of an access token, seconds (its `expires_in`).',
    default: '86400',
    envFile: 'commented',
    value: integer(1, 31_536_000),
  },
  REFRESH_TOKEN_TTL: {
    section: 'oauth',
    meaning: 'Lifetime of a refresh token, seconds (30 days); every rotation starts a new lifetime.',
    default: '2592000',
    envFile: 'commented',
    value: integer(1, 31_536_000),
  },
  REFRESH_TOKEN_RETRY_SECONDS: {
    section: 'oauth',
    meaning:
      'Seconds after a rotation during which the refresh token it replaced, presented again by its ' +
      'client while the successor is unused, is answered with that same successor; 0 turns retries off.',
    default: '60',
    notes:
      'So a client whose answer was lost, or two tabs refreshing at once, are not signed out. Anything ' +
      'else that comes back still revokes the family; with 0, so does every retry. At most 300: ' +
      '[why](security.md#refresh-tokens).',
    envFile: 'commented',
    value: integer(0, MAX_REFRESH_TOKEN_RETRY_SECONDS),
  },
  ACCESS_TOKEN_ALG: {
    section: 'oauth',
    meaning: 'Signing algorithm of access tokens; verification accepts only this one.',
    default: 'RS256',
    value: oneOf(SIGNING_ALGORITHMS),
  },
  BCRYPT_COST: {
    section: 'accounts',
    meaning: 'bcrypt cost of new password hashes; hashes made at another cost still verify.',
    default: '10',
    notes: 'One more doubles the time a login takes; `npm run bench` measures the rate.',
    envFile: 'commented',
    value: integer(4, 31),
  },
  SMTP_URL: {
    section: 'accounts',
    meaning: 'SMTP server that sends the mail, with its credentials.',
    unset: 'every message is written to `LOG_DIR/mail/` as an `.eml` file',
    notes:
      '`smtp://` (port 587) upgrades with STARTTLS when the server offers it, `smtps://` (port 465) ' +
      'uses TLS from the start. nodemailer options in the query win, e.g. `?requireTLS=true`; the ' +
      'defaults wait 10 s to connect, 10 s for the greeting and 20 s on a silent socket.',
    example: 'smtp://user:password@mail.example.com:587',
    envFile: 'commented',
    value: connectionUrl(['smtp:', 'smtps:']),
  },
  MAIL_FROM: {
    section: 'accounts',
    meaning: 'Sender of every message.',
    unset: '`APP_NAME <no-reply@host of APP_URL>`',
    example: 'Token Service <no-reply@example.com>',
    envFile: 'commented',
    value: text('an address, optionally with a display name'),
  },
  ACTIVATION_TTL: {
    section: 'accounts',
    meaning: 'Lifetime of an activation link, seconds.',
    default: '86400',
    value: integer(60, 31_536_000),
  },
  RESET_PASSWORD_TTL: {
    section: 'accounts',
    meaning: 'Lifetime of a password reset link, seconds.',
    default: '3600',
    value: integer(60, 31_536_000),
  },
  BODY_LIMIT: {
    section: 'http',
    meaning: 'Largest accepted request body; a larger one is refused with 413.',
    default: '1mb',
    notes:
      'With `docker-compose.yml` set it in `.env`: compose hands the same value to nginx, whose ' +
      '`client_max_body_size` follows it (nginx/entrypoint/10-body-limit.envsh). Behind another proxy, ' +
      'keep that proxy’s limit in step.',
    envFile: 'commented',
    value: byteSize(),
  },
  CORS_ORIGINS: {
    section: 'http',
    meaning: 'Origins whose browser scripts may call the API.',
    default: '',
    unset: 'no cross-origin access',
    notes:
      'With a list, every answer varies by `Origin`; `*` answers every origin alike. Script of an ' +
      'allowed origin may read `Location`, `WWW-Authenticate`, `Deprecation`, `Sunset` and `Link`. ' +
      'Browsers cache a preflight for `cors.maxAge` of [`CONFIG_FILE`](#the-config_file).',
    example: 'https://app.example.com',
    envFile: 'commented',
    value: corsOrigins(),
  },
  CONFIG_FILE: {
    section: 'http',
    meaning: 'JSON file of structured settings: response headers per route, CORS, deprecations.',
    unset: 'the built-in defaults',
    notes: 'Its members are described [below](#the-config_file).',
    describesService: true,
    value: jsonFile(),
  },
  ERROR_REPORT_TOKENS: {
    section: 'errorReport',
    meaning: 'Accepted `Error-Reporting-Token` values, each with the alias the report log records.',
    default: '',
    unset: '`POST /error-report` refuses every report (403)',
    notes: '`npm run cli -- token:generate error-reporting --alias web` makes a token and prints the line.',
    example: 'web:change-me-to-a-long-random-token',
    envFile: 'commented',
    value: errorReportTokens(),
  },
  ERROR_REPORT_IP_WHITELIST: {
    section: 'errorReport',
    meaning: 'Client addresses allowed to report errors.',
    default: '',
    unset: 'no address is admitted',
    notes:
      'Which address a report is checked by depends on the proxy in front: see ' +
      '[the client address](security.md#the-client-address-of-an-error-report).',
    example: '203.0.113.7,198.51.100.0/24,2001:db8::/32',
    envFile: 'commented',
    value: ipList(),
  },
  ERROR_REPORT_DOMAIN_WHITELIST: {
    section: 'errorReport',
    meaning: 'Host names allowed to report errors, matched against the host of the `Origin` header.',
    default: '',
    unset: 'no origin is admitted',
    example: 'app.example.com',
    envFile: 'commented',
    value: hostList(),
  },
  KEYS_DIR: {
    section: 'files',
    meaning:
      'Directory of the key ring: the signing keys of access tokens and the HMAC keys of refresh tokens.',
    default: 'keys',
    value: text('a directory path'),
  },
  LOG_DIR: {
    section: 'files',
    meaning: 'Directory of the error log, the error report log and (without `SMTP_URL`) mail.',
    default: 'log',
    value: text('a directory path'),
  },
} satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;

/** What a setting reads as: its kind's value, or undefined when it has no default and is unset. */
type ValueOf<S> = S extends { value: ValueKind<infer T> }
  ? S extends { default: string }
    ? T
    : T | undefined
  : never;
type Values<N extends SettingName> = { [K in N]: ValueOf<(typeof SETTINGS)[K]> };

type DescriptionSettingName = {
  [K in SettingName]: (typeof SETTINGS)[K] extends { describesService: true } ? K : never;
}[SettingName];

const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];
export const DESCRIPTION_SETTINGS = SETTING_NAMES.filter(
  (name) => (SETTINGS[name] as Setting).describesService,
) as DescriptionSettingName[];

/** Reads and checks the named variables; the first invalid one throws ConfigError naming it. */
function readSettings<N extends SettingName>(env: Env, names: readonly N[]): Values<N> {
  const values: Partial<Record<SettingName, unknown>> = {};
  for (const name of names) {
    const setting: Setting = SETTINGS[name];
    const raw = env[name];
    const text = raw === undefined || (raw === '' && !setting.value.emptyIsValue) ? setting.default : raw;
    values[name] = text === undefined ? undefined : setting.value.parse(text, name);
  }
  return values as Values<N>;
}

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

/**
 * What describing the service takes (route:list, openapi:generate): names, URL, grants and
 * deprecations, and nothing of how it runs. It reads and checks only the variables behind
 * these (DESCRIPTION_SETTINGS), so a runtime setting that would stop the service does not
 * stop a description.
 */
export type ServiceDescription = Pick<
  Config,
  'appName' | 'appVersion' | 'appUrl' | 'grants' | 'deprecations'
>;

type PackageInfo = { name: string; version: string };

export function loadServiceDescription(env: Env, packageInfo: PackageInfo): ServiceDescription {
  return serviceDescription(readSettings(env, DESCRIPTION_SETTINGS), packageInfo);
}

function serviceDescription(
  settings: Values<DescriptionSettingName>,
  packageInfo: PackageInfo,
): ServiceDescription {
  const appUrl = settings.APP_URL.replace(/\/+$/, '');
  return {
    appName: settings.APP_NAME ?? packageInfo.name,
    appVersion: settings.APP_VERSION ?? packageInfo.version,
    appUrl,
    grants: settings.OAUTH_GRANTS,
    deprecations: deprecations({ ...DEFAULT_DEPRECATIONS, ...settings.CONFIG_FILE?.deprecations }, appUrl),
  };
}

export function loadConfig(env: Env, packageInfo: PackageInfo): Config {
  const settings = readSettings(env, SETTING_NAMES);
  const description = serviceDescription(settings, packageInfo);
  const file = settings.CONFIG_FILE ?? {};
  // Memory stores cannot be shared between processes, so the embedded mode runs one worker.
  const embedded = !settings.MONGODB_URL || !settings.REDIS_URL;
  const workers = embedded ? 1 : (settings.WORKERS ?? availableParallelism());
  return {
    ...description,
    port: settings.PORT,
    host: settings.HOST,
    workers,
    hashThreads: Math.max(1, Math.floor(availableParallelism() / workers)),
    shutdownGraceMs: settings.SHUTDOWN_GRACE * 1000,
    production: settings.NODE_ENV === 'production',
    mongodbUrl: settings.MONGODB_URL,
    redisUrl: settings.REDIS_URL,
    redisReplicaAcks: {
      replicas: replicaAcks(settings.REDIS_URL, settings.REDIS_MIN_REPLICA_ACKS),
      timeoutMs: settings.REDIS_REPLICA_ACK_TIMEOUT_MS,
    },
    backendStartupTimeoutMs: settings.BACKEND_STARTUP_TIMEOUT * 1000,
    accountCacheSize: settings.ACCOUNT_CACHE_SIZE,
    smtpUrl: settings.SMTP_URL,
    keysDir: settings.KEYS_DIR,
    logDir: settings.LOG_DIR,
    accessTokenTtl: settings.ACCESS_TOKEN_TTL,
    authorizationCodeTtl: settings.AUTHORIZATION_CODE_TTL,
    refreshTokenTtl: settings.REFRESH_TOKEN_TTL,
    refreshTokenRetrySeconds: settings.REFRESH_TOKEN_RETRY_SECONDS,
    accessTokenAlg: settings.ACCESS_TOKEN_ALG,
    bcryptCost: settings.BCRYPT_COST,
    bodyLimit: settings.BODY_LIMIT,
    mail: {
      from: settings.MAIL_FROM ?? `${description.appName} <no-reply@${new URL(description.appUrl).hostname}>`,
      activationTtl: settings.ACTIVATION_TTL,
      resetTtl: settings.RESET_PASSWORD_TTL,
    },
    errorReport: {
      tokens: settings.ERROR_REPORT_TOKENS,
      ipWhitelist: settings.ERROR_REPORT_IP_WHITELIST,
      domainWhitelist: settings.ERROR_REPORT_DOMAIN_WHITELIST,
    },
    cors: { origins: settings.CORS_ORIGINS, maxAge: file.cors?.maxAge ?? DEFAULT_CORS_MAX_AGE },
    responseHeaders: responseHeaders(file),
  };
}

/**
 * Replicas each refresh-token change waits for: by default one behind Sentinels, which fail
 * over to a replica, and none otherwise. A Cluster spreads the writes over several primaries,
 * which one WAIT cannot follow.
 */
function replicaAcks(redisUrl: string | undefined, configured: number | undefined): number {
  const shape = redisUrl === undefined ? undefined : parseRedisUrl(redisUrl).shape;
  if (configured !== undefined && configured > 0 && shape === 'cluster')
    throw new ConfigError('REDIS_MIN_REPLICA_ACKS', 'cannot be used with a redis+cluster:// REDIS_URL');
  return configured ?? (shape === 'sentinel' ? 1 : 0);
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

function responseHeaders(file: ConfigFile): Config['responseHeaders'] {
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
    if (!URL.canParse(entry.link, `${appUrl}/`)) {
      throw new ConfigError('CONFIG_FILE', `deprecations.${route}.link must be a URL or a path`);
    }
    result[route] = { since, sunset, link: new URL(entry.link, `${appUrl}/`).href };
  }
  return result;
}

// The kinds of value a variable holds. Each parser sees the variable's text (or its default).

function text(accepts: string): ValueKind<string> {
  return { accepts, parse: (raw) => raw };
}

function integer(min: number, max: number): ValueKind<number> {
  return {
    accepts: `a whole number from ${min} to ${max}`,
    parse(raw, name) {
      if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
      const value = Number(raw);
      if (value < min || value > max)
        throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
      return value;
    },
  };
}

function oneOf<T extends string>(allowed: readonly T[]): ValueKind<T> {
  return {
    accepts: `one of ${allowed.map(code).join(', ')}`,
    parse(raw, name) {
      if (!(allowed as readonly string[]).includes(raw)) {
        throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
      }
      return raw as T;
    },
  };
}

function httpUrl(): ValueKind<string> {
  return {
    accepts: 'an `http:` or `https:` URL',
    parse(raw, name) {
      try {
        const parsed = new URL(raw);
        if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
      } catch {
        throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
      }
      return raw;
    },
  };
}

/** A URL of one of `protocols`. Never echoed in an error: connection URLs carry passwords. */
function connectionUrl(protocols: readonly string[]): ValueKind<string> {
  return {
    accepts: `a URL with the scheme ${protocols.map(code).join(' or ')}`,
    parse(raw, name) {
      let protocol: string;
      try {
        protocol = new URL(raw).protocol;
      } catch {
        throw new ConfigError(name, 'is not a valid URL');
      }
      if (!protocols.includes(protocol)) throw new ConfigError(name, `must use ${protocols.join(' or ')}`);
      return raw;
    },
  };
}

/** MONGODB_URL as the driver itself reads it. Never echoed in an error: it may carry a password. */
function mongodbUrl(): ValueKind<string> {
  return {
    accepts: 'a MongoDB connection string (`mongodb://` or `mongodb+srv://`)',
    parse(raw, name) {
      try {
        // The driver parses (and refuses) a connection string when the client is made; no connection yet.
        new MongoClient(raw);
      } catch (error) {
        throw new ConfigError(
          name,
          `is not a connection string the MongoDB driver accepts: ${withoutUrl(error, raw)}`,
        );
      }
      return raw;
    },
  };
}

/** REDIS_URL in one of its three shapes. Never echoed in an error: it may carry a password. */
function redisUrl(): ValueKind<string> {
  return {
    accepts: 'a `redis://`, `rediss://`, `redis+sentinel://` or `redis+cluster://` URL',
    parse(raw, name) {
      try {
        parseRedisUrl(raw);
      } catch (error) {
        throw new ConfigError(name, (error as Error).message);
      }
      return raw;
    },
  };
}

function withoutUrl(error: unknown, url: string): string {
  return String((error as Error).message)
    .split(url)
    .join('<the URL>');
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

function byteSize(): ValueKind<number> {
  return {
    accepts: 'a whole number of bytes, or with `kb`, `mb` or `gb` (`1kb` is 1024 bytes)',
    parse(given, name) {
      const raw = given.trim().toLowerCase();
      const match = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(raw);
      const value = match ? Number(match[1]) * (UNITS[match[2] ?? 'b'] ?? 1) : 0;
      if (!match || value < 1)
        throw new ConfigError(name, `must be a size such as 100kb or 1mb, got "${raw}"`);
      return value;
    },
  };
}

function list(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** A comma list, where an empty value is the empty list. */
function listOf<T>(accepts: string, parse: (items: string[], name: string) => T): ValueKind<T> {
  return { accepts, emptyIsValue: true, parse: (raw, name) => parse(list(raw), name) };
}

function grantList(): ValueKind<ReadonlySet<GrantType>> {
  return listOf(`a comma list of ${GRANT_TYPES.map(code).join(', ')}; empty enables none`, (names, name) => {
    for (const grant of names) {
      if (!(GRANT_TYPES as readonly string[]).includes(grant)) {
        throw new ConfigError(name, `names an unknown grant "${grant}" (known: ${GRANT_TYPES.join(', ')})`);
      }
    }
    return new Set(names as GrantType[]);
  });
}

function corsOrigins(): ValueKind<readonly string[] | '*'> {
  return listOf('a comma list of origins such as `https://app.example.com`, or `*`', (origins) =>
    origins.includes('*') ? '*' : origins,
  );
}

function hostList(): ValueKind<readonly string[]> {
  return listOf('a comma list of host names (compared without regard to case)', (hosts) =>
    hosts.map((host) => host.toLowerCase()),
  );
}

/** IP addresses and CIDR ranges, checked here so a typo stops the start naming the variable. */
function ipList(): ValueKind<readonly string[]> {
  return listOf('a comma list of IPv4 and IPv6 addresses and CIDR ranges', (entries, name) => {
    try {
      createClientWhitelist({ addresses: entries, domains: [] });
    } catch (error) {
      throw new ConfigError(name, `is invalid: ${(error as Error).message}`);
    }
    return entries;
  });
}

/**
 * `alias:token` pairs (a bare token gets the alias `token-N`). Tokens must be long enough not
 * to be guessed.
 */
function errorReportTokens(): ValueKind<ReadonlyMap<string, string>> {
  return listOf(
    'a comma list of `alias:token` pairs with distinct aliases and tokens of at least 16 characters',
    (entries, name) => {
      const tokens = new Map<string, string>();
      entries.forEach((entry, index) => {
        const colon = entry.indexOf(':');
        const alias = colon > 0 ? entry.slice(0, colon) : `token-${index + 1}`;
        const token = colon > 0 ? entry.slice(colon + 1) : entry;
        if (token.length < 16)
          throw new ConfigError(name, `entry ${index + 1} has a token shorter than 16 characters`);
        if (tokens.has(alias)) throw new ConfigError(name, `alias "${alias}" is used twice`);
        tokens.set(alias, token);
      });
      return tokens;
    },
  );
}

function jsonFile(): ValueKind<ConfigFile> {
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
