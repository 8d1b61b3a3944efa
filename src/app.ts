import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { createAccountFlows } from './accounts/account-flows.ts';
import { createAccountManagement } from './accounts/management.ts';
import { createPasswordHasher, type PasswordHasher } from './accounts/password-hasher.ts';
import { createSessions, type Sessions } from './accounts/sessions.ts';
import type { Config } from './config.ts';
import { createErrorReportReceiver, type ErrorReportReceiver } from './error-report/error-report.ts';
import { createAuthenticator } from './http/authenticate.ts';
import { createRequestHandler } from './http/pipeline.ts';
import type { AnyRoute, Services } from './http/route.ts';
import { routeTable } from './http/routes/index.ts';
import { createErrorLogger } from './logging/error-log.ts';
import { createMailer } from './mail/mailer.ts';
import { createAccessTokenService } from './oauth/access-token.ts';
import { loadKeySet } from './oauth/keys.ts';
import { createRefreshTokenService } from './oauth/refresh-token.ts';
import { createTokenEndpoint } from './oauth/token-endpoint.ts';
import { seed } from './seed.ts';
import { openStores } from './stores/open.ts';
import type { Stores } from './stores/types.ts';

export interface Application {
  server: Server;
  stores: Stores;
  passwords: PasswordHasher;
  routes: readonly AnyRoute[];
  /** Closes the stores and the hashing threads; the caller closes the server first. */
  close(): Promise<void>;
}

/**
 * The composition root: the only place that turns configuration into stores, services and
 * the HTTP pipeline. Everything below receives what it needs and never reads configuration.
 */
export async function createApplication(
  config: Config,
  options: {
    log: (message: string) => void;
    hashThreads?: number;
    /** Tests only (e.g. a route that throws); never reachable from configuration. */
    extraRoutes?: readonly AnyRoute[];
  },
): Promise<Application> {
  const keys = loadKeySet(config.keysDir);
  // Before the stores open: a malformed whitelist entry stops the start without leaving connections.
  const errorReports = createErrorReportReceiver({ ...config.errorReport, logDir: config.logDir });
  const stores = await openStores({
    mongodbUrl: config.mongodbUrl,
    redisUrl: config.redisUrl,
    startupTimeoutMs: config.backendStartupTimeoutMs,
    log: options.log,
  });
  const passwords = createPasswordHasher({ cost: config.bcryptCost, threads: options.hashThreads ?? 1 });
  const created = await seed(stores, passwords);
  if (created.length > 0) options.log(`Seeded ${created.join(', ')}`);

  const accessTokens = createAccessTokenService({
    keys,
    algorithm: config.accessTokenAlg,
    issuer: config.appUrl,
    audience: config.appUrl,
    ttlSeconds: config.accessTokenTtl,
  });
  const refreshTokens = createRefreshTokenService({
    store: stores.refreshTokens,
    encryptionKey: keys.encryptionKey,
    ttlSeconds: config.refreshTokenTtl,
  });
  const sessions = createSessions({
    accounts: { admin: stores.admins, user: stores.users },
    refreshTokens: stores.refreshTokens,
    passwords,
  });
  const tokenEndpoint = createTokenEndpoint(config.grants, {
    clients: stores.clients,
    scopes: stores.scopes,
    sessions,
    accessTokens,
    refreshTokens,
  });

  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mail.from,
    mailDir: join(config.logDir, 'mail'),
    onFailure: options.log,
  });
  const accounts = accountServices({ config, stores, sessions, passwords, mailer });

  const services: Services = {
    about: { name: config.appName, version: config.appVersion },
    tokenEndpoint,
    errorReports,
    accountFlows: accounts.flows,
    accounts: { user: accounts.users, admin: accounts.admins },
  };
  const routes = [...routeTable(config.grants), ...(options.extraRoutes ?? [])];
  const errorLog = createErrorLogger({ logDir: config.logDir, service: config.appName });
  const handler = createRequestHandler({
    routes,
    services,
    bodyLimit: config.bodyLimit,
    cors: config.cors,
    responseHeaders: config.responseHeaders,
    deprecations: config.deprecations,
    authenticate: createAuthenticator({ accessTokens, clients: stores.clients, sessions }),
    onUnexpectedError: (error, req, route) =>
      errorLog.error({ err: error, ...requestFacts(req, route), route: route?.name }),
  });

  return {
    server: createServer({ keepAliveTimeout: 65_000 }, handler),
    stores,
    passwords,
    routes,
    async close() {
      await Promise.allSettled([stores.close(), passwords.close(), mailer.close()]);
    },
  };
}

export type AccountServices = ReturnType<typeof accountServices>;

/** The account domain: self-service flows of users, and the management of users and admins. */
function accountServices(deps: {
  config: Pick<Config, 'appName' | 'appUrl' | 'mail'>;
  stores: Stores;
  sessions: Sessions;
  passwords: PasswordHasher;
  mailer: ReturnType<typeof createMailer>;
}) {
  const { config, stores, sessions, passwords, mailer } = deps;
  const common = { sessions, oneTimeTokens: stores.oneTimeTokens, passwords };
  return {
    flows: createAccountFlows({
      ...common,
      users: stores.users,
      mailer,
      appName: config.appName,
      appUrl: config.appUrl,
      activationTtl: config.mail.activationTtl,
      resetTtl: config.mail.resetTtl,
    }),
    users: createAccountManagement({ ...common, kind: 'user', accounts: stores.users }),
    admins: createAccountManagement({ ...common, kind: 'admin', accounts: stores.admins }),
  };
}

/**
 * The request facts an error line carries: never headers or the body, and the route's path
 * pattern rather than the path, which may hold a live activation or reset hash.
 */
function requestFacts(
  req: IncomingMessage,
  route: AnyRoute | undefined,
): { method: string | undefined; path: string } {
  return { method: req.method, path: route?.path ?? (req.url ?? '').split('?')[0] ?? '' };
}
