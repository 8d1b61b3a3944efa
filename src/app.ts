import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { PasswordHasher } from './accounts/password-hasher.ts';
import { type Config, ConfigError } from './config/config.ts';
import { createAuthenticator } from './http/authenticate.ts';
import { createRequestHandler } from './http/pipeline.ts';
import type { AnyRoute } from './http/route.ts';
import { routeTable } from './http/routes/index.ts';
import { createErrorLogger } from './logging/error-log.ts';
import { GRANT_TYPES } from './oauth/model.ts';
import { seed } from './seed.ts';
import { openServices } from './services.ts';
import type { Stores } from './stores/stores.ts';

export interface Application {
  server: Server;
  stores: Stores;
  passwords: PasswordHasher;
  routes: readonly AnyRoute[];
  /** Closes the stores and the hashing threads; the caller closes the server first. */
  close(): Promise<void>;
}

/**
 * The HTTP application: the services of the composition root (services.ts), the seed
 * records a fresh store lacks, the route table and the pipeline that serves it.
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
  assertConfigurationFitsRoutes(config);
  const services = await openServices(config, { log: options.log, hashThreads: options.hashThreads });
  const created = await seed(services.stores, services.passwords);
  if (created.length > 0) options.log(`Seeded ${created.join(', ')}`);

  const routes = [...routeTable(config.grants), ...(options.extraRoutes ?? [])];
  const errorLog = createErrorLogger({ logDir: config.logDir, service: config.appName });
  const handler = createRequestHandler({
    routes,
    services,
    bodyLimit: config.bodyLimit,
    cors: config.cors,
    responseHeaders: config.responseHeaders,
    deprecations: config.deprecations,
    authenticate: createAuthenticator({
      accessTokens: services.accessTokens,
      clients: services.stores.clients,
      sessions: services.sessions,
    }),
    onUnexpectedError: (error, req, route) =>
      errorLog.error({ err: error, ...requestFacts(req, route), route: route?.name }),
  });

  return {
    server: createServer({ keepAliveTimeout: 65_000 }, handler),
    stores: services.stores,
    passwords: services.passwords,
    routes,
    close: services.close,
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

/**
 * What CONFIG_FILE says per route must fit the routes. A route name that names no route
 * (`npm run cli -- route:list` lists them) would be ignored without a word; so would a header
 * the route sets itself (those its responses document: `Cache-Control` on the token routes,
 * `Content-Security-Policy` on the sign-in page, ...), since the route's own value wins. Any
 * route counts, including those of grants switched off.
 */
function assertConfigurationFitsRoutes(config: Config): void {
  const routes = routeTable(new Set(GRANT_TYPES));
  const known = new Set(routes.map((route) => route.name));
  for (const [member, names] of [
    ['responseHeaders', Object.keys(config.responseHeaders)],
    ['deprecations', Object.keys(config.deprecations)],
  ] as const) {
    const unknown = names.find((name) => !known.has(name) && !(name === '*' && member === 'responseHeaders'));
    if (unknown !== undefined)
      throw new ConfigError('CONFIG_FILE', `${member}.${unknown}: no route has this name (see route:list)`);
  }
  for (const [name, headers] of Object.entries(config.responseHeaders)) {
    const own = new Set(
      routes
        .filter((route) => route.name === name)
        .flatMap((route) => Object.values(route.responses))
        .flatMap((response) => Object.keys(response.headers ?? {}))
        .map((header) => header.toLowerCase()),
    );
    const taken = Object.keys(headers).find((header) => own.has(header.toLowerCase()));
    if (taken !== undefined)
      throw new ConfigError(
        'CONFIG_FILE',
        `responseHeaders.${name}.${taken}: this route sets this header itself (its own value would win)`,
      );
  }
}
