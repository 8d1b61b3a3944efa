import type { Deprecation } from '../http/headers.ts';
import type { SigningAlgorithm } from '../oauth/access-token.ts';
import type { GrantType } from '../oauth/model.ts';

/**
 * Configuration, read from the environment once at start and validated there. Nothing else in
 * the service reads `process.env`: the composition root hands each part what it needs.
 *
 * SETTINGS is the one list of variables: `loadConfig` reads and checks every one of them, and
 * `npm run cli -- config:docs` writes docs/configuration.md and .env.example from it. A new
 * setting is one entry there, plus the field of Config that carries it.
 *
 * The folder: settings.ts (the table), setting.ts (what an entry of it is), value-kinds.ts
 * (how a variable's text becomes a value), config-file.ts (the members of CONFIG_FILE),
 * load.ts (reading the environment), and this file: the configuration the entry points and
 * the composition root receive.
 */

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
  /** Largest avatar image, bytes. */
  avatarSizeLimit: number;
  /** Longest side of a stored avatar, pixels. */
  avatarMaxSide: number;
  cors: { origins: readonly string[] | '*'; maxAge: number };
  mail: {
    /** Sender of every message. */
    from: string;
    /** ACCOUNT_PAGES_URL: mailed links are `{linkBase}/<activate|reset-password|change-identity>/{hash}`. */
    linkBase: string;
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
