import { checkAddressEntries } from '../error-report/whitelist.ts';
import { checkSmtpUrl } from '../mail/mailer.ts';
import { SIGNING_ALGORITHMS } from '../oauth/access-token.ts';
import { GRANT_TYPES, MAX_REFRESH_TOKEN_RETRY_SECONDS } from '../oauth/model.ts';
import { checkMongoUrl } from '../stores/mongo/connect.ts';
import { parseRedisUrl } from '../stores/redis/url.ts';
import { configFile } from './config-file.ts';
import type { Setting } from './setting.ts';
import {
  byteSize,
  checkedBy,
  corsOrigins,
  errorReportTokens,
  grantList,
  httpUrl,
  integer,
  listCheckedBy,
  listOf,
  oneOf,
  text,
} from './value-kinds.ts';

/**
 * A write may wait for two WAITs back to back (stores/redis/writes.ts), so a refresh waits
 * up to about twice this for the replicas; its connection's command timeout allows for that
 * (stores/redis/connect.ts).
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
    default: '127.0.0.1',
    notes:
      'Only this machine reaches the service unless it is set: the Dockerfile and the compose ' +
      'files set `0.0.0.0`, and a proxy on another host needs it too.',
    example: '0.0.0.0',
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
      'it makes every access token already issued invalid (its `iss` and `aud` no longer match). ' +
      'Its origin is the only one the sign-in page takes its form from: browsers must reach the ' +
      'page at this address.',
    example: 'https://localhost',
    envFile: 'set',
    describesService: true,
    value: httpUrl(),
  },
  NODE_ENV: {
    section: 'service',
    meaning:
      'Set to `production`, every start names in one log entry what a production deployment should ' +
      'not have (the list of `config:check`).',
    unset: 'no such entry',
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
    value: checkedBy(
      'a MongoDB connection string (`mongodb://` or `mongodb+srv://`)',
      checkMongoUrl,
      'is not a connection string the MongoDB driver accepts: ',
    ),
  },
  REDIS_URL: {
    section: 'storage',
    meaning: 'Redis for refresh tokens and the authorization code flow (sign-in forms, codes).',
    unset: 'kept in memory, lost at exit',
    notes:
      'One server: `redis://[[user]:password@]host[:port][/db]` (`rediss://` over TLS). Sentinel: ' +
      '`redis+sentinel://[:password@]host1:26379,host2:26379/<master-name>[/<db>]`, which follows ' +
      'failovers by itself. Redis Cluster: `redis+cluster://[:password@]host1:7000,host2:7001` (any ' +
      'of its nodes). The password is that of the Redis servers, and with Sentinel of the Sentinels ' +
      'too (one password for the set, as docker-compose.ha.yml gives it; a Sentinel that requires ' +
      'none takes it with a warning from ioredis). ' +
      'No query options: the [connection defaults](#connections-to-mongodb-and-redis) are not ' +
      'for overriding.',
    example: 'redis://:password@redis:6379',
    value: checkedBy(
      'a `redis://`, `rediss://`, `redis+sentinel://` or `redis+cluster://` URL',
      parseRedisUrl,
    ),
  },
  REDIS_MIN_REPLICA_ACKS: {
    section: 'storage',
    meaning:
      'Replicas that must have a refresh-token change (a sign-in, a rotation, a revocation) before it ' +
      'is answered; one they do not confirm in time is answered 503, and the client retries.',
    unset:
      '1 when `REDIS_URL` names Sentinels (`redis+sentinel://`) or a Cluster (`redis+cluster://`), otherwise 0',
    notes:
      'Redis `WAIT`: a refresh answered 200 survives the loss of the primary (in a Cluster, of ' +
      'the shard that owns the change, whose replicas confirm it). With one replica (per shard), ' +
      'refreshes and sign-ins answer 503 while it is down, without waiting once the primary ' +
      'reports it gone: [replicas](operations.md#redis-replicas).',
    value: integer(0, 16),
  },
  REDIS_REPLICA_ACK_TIMEOUT_MS: {
    section: 'storage',
    meaning: 'Milliseconds a refresh-token change waits for `REDIS_MIN_REPLICA_ACKS` replicas.',
    default: '500',
    notes: `At most ${MAX_REPLICA_ACK_TIMEOUT_MS}: a change may wait behind another's wait, so a refresh waits up to about twice this.`,
    value: integer(1, MAX_REPLICA_ACK_TIMEOUT_MS),
  },
  ACCOUNT_CACHE_SIZE: {
    section: 'storage',
    meaning:
      'Accounts each process keeps in memory for authentication when both `MONGODB_URL` and `REDIS_URL` are set.',
    default: '10000',
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
    value: integer(1, 600),
  },
  ACCESS_TOKEN_TTL: {
    section: 'oauth',
    meaning: 'Lifetime of an access token, seconds (its `expires_in`).',
    default: '86400',
    value: integer(1, 31_536_000),
  },
  REFRESH_TOKEN_TTL: {
    section: 'oauth',
    meaning: 'Lifetime of a refresh token, seconds (30 days); every rotation starts a new lifetime.',
    default: '2592000',
    value: integer(1, 31_536_000),
  },
  REFRESH_TOKEN_RETRY_SECONDS: {
    section: 'oauth',
    meaning:
      'Seconds after a rotation was answered during which the refresh token it replaced, presented ' +
      'again by its client while the successor is unused, is answered with that same successor; a ' +
      `retry so answered starts them again, up to ${MAX_REFRESH_TOKEN_RETRY_SECONDS} seconds after ` +
      'the first answer; 0 turns retries off.',
    default: '60',
    notes:
      'So a client whose answer was lost, or two tabs refreshing at once, are not signed out. Behind ' +
      'Redis replicas the window starts once they confirm the first answer, so a replica outage ' +
      'of any length before it does not end it, and a retry refused during one starts it again (up to ' +
      'that limit). Anything else that comes back still revokes the family; with 0, so ' +
      'does every retry. Longer than a Redis failover (seconds): a retry that cannot reach Redis ' +
      'meanwhile must still find the window open. At most ' +
      `${MAX_REFRESH_TOKEN_RETRY_SECONDS}: [why](security.md#refresh-tokens).`,
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
    value: checkedBy('a URL with the scheme `smtp:` or `smtps:`', checkSmtpUrl),
  },
  ACCOUNT_PAGES_URL: {
    section: 'accounts',
    meaning:
      'Base of the links mailed to account holders: `{ACCOUNT_PAGES_URL}/activate/{hash}`, ' +
      '`…/reset-password/{hash}`, `…/change-identity/{hash}`.',
    unset: "`{APP_URL}/account`, the service's own pages",
    notes:
      'A trailing `/` is dropped. Set it when a front end of the deployment shows these pages ' +
      'itself; docs/api.md says what that front end does with the hash.',
    example: 'https://app.example.com/account',
    value: httpUrl(),
  },
  MAIL_FROM: {
    section: 'accounts',
    meaning: 'Sender of every message.',
    unset: '`APP_NAME <no-reply@host of APP_URL>`',
    example: 'Token Service <no-reply@example.com>',
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
  AVATAR_SIZE_LIMIT: {
    section: 'accounts',
    meaning: 'Largest accepted avatar image; a larger one is refused with 413.',
    default: '1mb',
    notes:
      'Independent of `BODY_LIMIT`: the avatar uploads (`PUT /users/my-account/avatar`, ' +
      '`PUT /users/{id}/avatar`) accept this much image plus 16 KiB of multipart form around it, ' +
      'whatever `BODY_LIMIT` says. With `docker-compose.yml` set it in `.env`: compose hands it to ' +
      'nginx too, whose `client_max_body_size` on those paths follows it ' +
      '(nginx/entrypoint/10-body-limit.envsh). Avatars are kept in MongoDB, one document each, so it ' +
      'is at most 15mb.',
    value: byteSize(15 * 1024 * 1024),
  },
  AVATAR_MAX_SIDE: {
    section: 'accounts',
    meaning: 'Longest side, in pixels, of a stored avatar; a larger upload is scaled down to it.',
    default: '512',
    notes:
      'Every upload is decoded and encoded again in its own format (turned upright, its metadata ' +
      'removed); one within this size on both sides keeps its size, a larger one is fitted within it, ' +
      'its proportions kept. At most 4096 (the most pixels a side an upload may have).',
    value: integer(16, 4096),
  },
  BODY_LIMIT: {
    section: 'http',
    meaning: 'Largest accepted request body; a larger one is refused with 413.',
    default: '1mb',
    notes:
      'With `docker-compose.yml` set it in `.env`: compose hands the same value to nginx, whose ' +
      '`client_max_body_size` follows it (nginx/entrypoint/10-body-limit.envsh). Behind another proxy, ' +
      'keep that proxy’s limit in step.',
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
      'The sign-in page (`/security/authorize`) answers no origin: it is for top-level navigation. ' +
      'Browsers cache a preflight for `cors.maxAge` of [`CONFIG_FILE`](#the-config_file).',
    example: 'https://app.example.com',
    value: corsOrigins(),
  },
  CONFIG_FILE: {
    section: 'http',
    meaning: 'JSON file of structured settings: response headers per route, CORS, deprecations.',
    unset: 'the built-in defaults',
    notes: 'Its members are described [below](#the-config_file).',
    describesService: true,
    value: configFile({
      responseHeaders: {
        '*': {
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Permissions-Policy': 'interest-cohort=()',
        },
      },
      cors: { maxAge: 600 },
      // `GET /` is deprecated as a demonstration of the feature, with a sunset far in the future.
      deprecations: {
        home: { since: '2025-01-01T00:00:00Z', sunset: '2099-12-31T23:59:59Z', link: '/#deprecation' },
      },
    }),
  },
  ERROR_REPORT_TOKENS: {
    section: 'errorReport',
    meaning: 'Accepted `Error-Reporting-Token` values, each with the alias the report log records.',
    default: '',
    unset: '`POST /error-report` refuses every report (403)',
    notes: '`npm run cli -- token:generate error-reporting --alias web` makes a token and prints the line.',
    example: 'web:change-me-to-a-long-random-token',
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
    value: listCheckedBy(
      'a comma list of IPv4 and IPv6 addresses and CIDR ranges',
      checkAddressEntries,
      'is invalid: ',
    ),
  },
  ERROR_REPORT_DOMAIN_WHITELIST: {
    section: 'errorReport',
    meaning: 'Host names allowed to report errors, matched against the host of the `Origin` header.',
    default: '',
    unset: 'no origin is admitted',
    example: 'app.example.com',
    // Compared as the whitelist reads them (error-report/whitelist.ts), without regard to case.
    value: listOf('a comma list of host names (compared without regard to case)', (hosts) => hosts),
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
