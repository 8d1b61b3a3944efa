import { join } from 'node:path';
import { createAccountFlows } from './accounts/account-flows.ts';
import { type AccountFormSeal, createAccountForms } from './accounts/account-forms.ts';
import { AVATAR_PIXEL_LIMIT, configureImageLibrary } from './accounts/avatar-image.ts';
import { createAvatars } from './accounts/avatars.ts';
import { createAccountManagement } from './accounts/management.ts';
import { createPasswordHasher } from './accounts/password-hasher.ts';
import { createSessions } from './accounts/sessions.ts';
import type { Config } from './config/config.ts';
import { createErrorReportReceiver } from './error-report/error-report.ts';
import type { Services } from './http/route.ts';
import { createMailer } from './mail/mailer.ts';
import { type AccessTokenService, createAccessTokenService } from './oauth/access-token.ts';
import { createAuthorizationCodeService } from './oauth/authorization-code.ts';
import { createAuthorizationEndpoint } from './oauth/authorization-endpoint.ts';
import { createClientManagement } from './oauth/client-management.ts';
import { openKeyRing } from './oauth/key-ring.ts';
import type { KeyRingStore } from './oauth/key-ring-store.ts';
import { createRefreshTokenService } from './oauth/refresh-token.ts';
import { createRequestSealer, createSealer } from './oauth/sealed-request.ts';
import { createTokenEndpoint } from './oauth/token-endpoint.ts';
import { createRuleLock, ruleLockTiming } from './rule-lock.ts';
import { fileKeyRingStore } from './stores/key-ring/file-store.ts';
import { longestMongoOperationMs } from './stores/mongo/connect.ts';
import { openStores } from './stores/open.ts';

/**
 * The composition root: the only place that turns configuration into stores and services.
 * The HTTP application and the CLI commands open theirs here, so a command acts through the
 * very services the API does. Everything below receives what it needs and never reads
 * configuration.
 */

export interface OpenOptions {
  log?: (message: string) => void;
  /** Threads that hash passwords; one unless said otherwise. */
  hashThreads?: number;
  /** How long the backends may take to answer at start; BACKEND_STARTUP_TIMEOUT unless said otherwise. */
  startupTimeoutMs?: number;
}

export type AccountServices = Awaited<ReturnType<typeof openAccountServices>>;

/**
 * The key ring in `dir`: KEYS_DIR, or the directory a keys command names. What the primary
 * prepares, the keys commands change and every worker follows.
 */
export function openKeyRingStore(dir: string): KeyRingStore {
  return fileKeyRingStore(dir);
}

/**
 * Before the primary or a keys command writes the key ring in `dir`: a directory open to its
 * group or others is tightened to 0700, or named; returns what to log.
 */
export { secureKeyDirectory } from './stores/key-ring/file-store.ts';

/**
 * The stores, password hashing, sessions and the account services: what the account
 * commands of the CLI act through, and what everything else stands on.
 */
export async function openAccountServices(config: Config, options: OpenOptions = {}) {
  configureImageLibrary();
  const stores = await openStores({
    mongodbUrl: config.mongodbUrl,
    redisUrl: config.redisUrl,
    redisReplicaAcks: config.redisReplicaAcks,
    startupTimeoutMs: options.startupTimeoutMs ?? config.backendStartupTimeoutMs,
    log: options.log,
    accountCacheSize: config.accountCacheSize,
  });
  const passwords = createPasswordHasher({ cost: config.bcryptCost, threads: options.hashThreads ?? 1 });
  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mail.from,
    mailDir: join(config.logDir, 'mail'),
    onFailure: options.log,
  });
  const sessions = createSessions({
    accounts: { admin: stores.admins, user: stores.users },
    refreshTokens: stores.refreshTokens,
    passwords,
  });
  const ruleLock = createRuleLock(
    stores.leases,
    ruleLockTiming(config.mongodbUrl === undefined ? undefined : longestMongoOperationMs(config.mongodbUrl)),
  );
  const common = { sessions, oneTimeTokens: stores.oneTimeTokens, passwords };
  return {
    stores,
    passwords,
    sessions,
    accountFlows: createAccountFlows({
      ...common,
      users: stores.users,
      mailer,
      appName: config.appName,
      linkBase: config.mail.linkBase,
      activationTtl: config.mail.activationTtl,
      resetTtl: config.mail.resetTtl,
    }),
    accounts: {
      user: createAccountManagement({
        ...common,
        ruleLock,
        kind: 'user',
        accounts: stores.users,
        avatars: stores.avatars,
      }),
      admin: createAccountManagement({ ...common, ruleLock, kind: 'admin', accounts: stores.admins }),
    },
    avatars: createAvatars({
      users: stores.users,
      avatars: stores.avatars,
      limits: { bytes: config.avatarSizeLimit, pixels: AVATAR_PIXEL_LIMIT, side: config.avatarMaxSide },
    }),
    oauthClients: createClientManagement({ clients: stores.clients, ruleLock }),
    /** Closes the stores, the hashing threads and the mail transport; each holds the process open. */
    async close(): Promise<void> {
      await Promise.allSettled([stores.close(), passwords.close(), mailer.close()]);
    },
  };
}

/** How long a sign-in form stays usable: time enough to type a password. */
const SIGN_IN_FORM_TTL_SECONDS = 600;
/** How long an account page's form stays usable: time enough to fill in a registration. */
const ACCOUNT_FORM_TTL_SECONDS = 1800;

/** What the HTTP application needs: what it hands its handlers, and the access tokens authentication verifies. */
export type ApplicationServices = AccountServices & Services & { accessTokens: AccessTokenService };

/** Everything the HTTP application hands its handlers, on top of the account services. */
export async function openServices(config: Config, options: OpenOptions = {}): Promise<ApplicationServices> {
  // Before the stores open: a malformed whitelist entry or key ring stops the start without
  // leaving connections.
  const errorReports = createErrorReportReceiver({ ...config.errorReport, logDir: config.logDir });
  const keyRing = await openKeyRing(openKeyRingStore(config.keysDir), { log: options.log });
  const base = await openAccountServices(config, options).catch((error: unknown) => {
    keyRing.close();
    throw error;
  });
  const accessTokens = createAccessTokenService({
    keys: keyRing,
    algorithm: config.accessTokenAlg,
    issuer: config.appUrl,
    audience: config.appUrl,
    ttlSeconds: config.accessTokenTtl,
  });
  const refreshTokens = createRefreshTokenService({
    store: base.stores.refreshTokens,
    keys: keyRing.refreshTokenMacKeys,
    ttlSeconds: config.refreshTokenTtl,
    retrySeconds: config.refreshTokenRetrySeconds,
  });
  const authorizationCodes = createAuthorizationCodeService({
    store: base.stores.codeFlow,
    ttlSeconds: config.authorizationCodeTtl,
  });
  return {
    ...base,
    async close() {
      keyRing.close();
      await base.close();
    },
    about: { name: config.appName, version: config.appVersion },
    accessTokens,
    errorReports,
    tokenEndpoint: createTokenEndpoint(config.grants, {
      clients: base.stores.clients,
      scopes: base.stores.scopes,
      sessions: base.sessions,
      accessTokens,
      refreshTokens,
      authorizationCodes,
    }),
    accountForms: createAccountForms({
      flows: base.accountFlows,
      sealer: createSealer<AccountFormSeal>('account form seal', {
        keys: keyRing.refreshTokenMacKeys,
        ttlSeconds: ACCOUNT_FORM_TTL_SECONDS,
      }),
      usedValues: base.stores.codeFlow,
      appUrl: config.appUrl,
    }),
    authorizationEndpoint: createAuthorizationEndpoint({
      clients: base.stores.clients,
      scopes: base.stores.scopes,
      sessions: base.sessions,
      sealer: createRequestSealer({
        keys: keyRing.refreshTokenMacKeys,
        ttlSeconds: SIGN_IN_FORM_TTL_SECONDS,
      }),
      store: base.stores.codeFlow,
      codes: authorizationCodes,
      issuer: config.appUrl,
      log: options.log,
    }),
  };
}
