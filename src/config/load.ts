import { availableParallelism } from 'node:os';
import { parseRedisUrl } from '../stores/redis/url.ts';
import type { Config, ServiceDescription } from './config.ts';
import { deprecations, responseHeaders } from './config-file.ts';
import type { Setting, ValueKind } from './setting.ts';
import { SETTINGS, type SettingName } from './settings.ts';

/** The settings behind a ServiceDescription: route:list and openapi:generate read only these. */
type DescriptionSettingName = {
  [K in SettingName]: (typeof SETTINGS)[K] extends { describesService: true } ? K : never;
}[SettingName];

const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];
export const DESCRIPTION_SETTINGS = SETTING_NAMES.filter(
  (name) => (SETTINGS[name] as Setting).describesService,
) as DescriptionSettingName[];

type Env = Readonly<Record<string, string | undefined>>;

/** What a setting reads as: its kind's value, or undefined when it has no default and is unset. */
type ValueOf<S> = S extends { value: ValueKind<infer T> }
  ? S extends { default: string }
    ? T
    : T | undefined
  : never;
type Values<N extends SettingName> = { [K in N]: ValueOf<(typeof SETTINGS)[K]> };

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

/** What holds where CONFIG_FILE, or the lack of one, says nothing. */
const FILE_DEFAULTS = SETTINGS.CONFIG_FILE.value.defaults;

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
    deprecations: deprecations(
      { ...FILE_DEFAULTS.deprecations, ...settings.CONFIG_FILE?.deprecations },
      appUrl,
    ),
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
    avatarSizeLimit: settings.AVATAR_SIZE_LIMIT,
    avatarMaxSide: settings.AVATAR_MAX_SIDE,
    mail: {
      linkBase: settings.ACCOUNT_PAGES_URL?.replace(/\/+$/, '') ?? `${description.appUrl}/account`,
      from: settings.MAIL_FROM ?? `${description.appName} <no-reply@${new URL(description.appUrl).hostname}>`,
      activationTtl: settings.ACTIVATION_TTL,
      resetTtl: settings.RESET_PASSWORD_TTL,
    },
    errorReport: {
      tokens: settings.ERROR_REPORT_TOKENS,
      ipWhitelist: settings.ERROR_REPORT_IP_WHITELIST,
      domainWhitelist: settings.ERROR_REPORT_DOMAIN_WHITELIST,
    },
    cors: { origins: settings.CORS_ORIGINS, maxAge: file.cors?.maxAge ?? FILE_DEFAULTS.cors.maxAge },
    responseHeaders: responseHeaders(file, FILE_DEFAULTS),
  };
}

/**
 * Replicas each refresh-token change waits for: by default one behind Sentinels and in a
 * Cluster, which fail over to a replica (in a Cluster, the shard's that owns the change), and
 * none otherwise.
 */
function replicaAcks(redisUrl: string | undefined, configured: number | undefined): number {
  const shape = redisUrl === undefined ? undefined : parseRedisUrl(redisUrl).shape;
  return configured ?? (shape === 'sentinel' || shape === 'cluster' ? 1 : 0);
}
