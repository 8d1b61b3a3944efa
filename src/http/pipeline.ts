import type { IncomingMessage, ServerResponse } from 'node:http';
import polka, { type Request } from 'polka';
import { parse as parsePattern } from 'regexparam';
import { BadRequest, MethodNotAllowed, NotFound, Problem } from '../errors.ts';
import { type Identity, requirePermission } from '../identity.ts';
import { compileValidator } from '../validation.ts';
import { parseBody, searchParamsObject } from './body.ts';
import { answerPreflight, applyCors, type CorsPolicy } from './cors.ts';
import { applyHeaders, type Deprecation, headersForRoute } from './headers.ts';
import { writeProblem } from './problem.ts';
import type { AnyRoute, Reply, Services } from './route.ts';

export interface PipelineOptions {
  routes: readonly AnyRoute[];
  /** Handed to every handler with its request. */
  services: Services;
  bodyLimit: number;
  cors: CorsPolicy;
  responseHeaders: Readonly<Record<string, Readonly<Record<string, string>>>>;
  deprecations: Readonly<Record<string, Deprecation>>;
  authenticate(authorization: string | undefined): Promise<Identity>;
  /** Called with every error that is not a Problem, i.e. a bug; the client only sees a generic 500. */
  onUnexpectedError(error: unknown, req: IncomingMessage, route: AnyRoute | undefined): void;
}

/**
 * The HTTP pipeline, in order. polka matches the route; then, for that route:
 * response headers → CORS → body parsing → authentication (identity or guest) →
 * permission check (role vs the route's permission) → body validation → handler,
 * with every failure turned into problem+json in one place.
 */
export function createRequestHandler(
  options: PipelineOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const app = polka({ onNoMatch: (req, res) => answerUnmatched(req, res) });
  const defaultHeaders = headersForRoute(undefined, options.responseHeaders, undefined);
  const pathPatterns = options.routes.flatMap((route) => {
    const { pattern } = parsePattern(route.path);
    const methods = route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
    return methods.map((method) => ({ method, pattern, route }));
  });

  for (const route of options.routes) {
    const headers = headersForRoute(route.name, options.responseHeaders, options.deprecations[route.name]);
    const cors = corsFor([route]);
    const checked = route.checkedBy !== 'handler';
    const validator = route.body && checked ? compileValidator(route.body) : undefined;
    const queryValidator =
      route.query && checked
        ? compileValidator(route.query, (errors) => new BadRequest('The query is invalid', { errors }))
        : undefined;

    const serve = async (req: Request, res: ServerResponse) => {
      applyHeaders(res, headers);
      applyCors(req, res, cors);
      try {
        const body = route.upload ? undefined : await parseBody(req, options.bodyLimit, route.bodyMediaTypes);
        const identity =
          route.permission === 'public'
            ? { role: 'guest' as const }
            : await options.authenticate(req.headers.authorization);
        requirePermission(identity, route.permission);
        const query = new URLSearchParams(req.search);
        queryValidator?.check(searchParamsObject(query));
        const reply = await route.handler(
          {
            req,
            res,
            params: req.params,
            query,
            body: validator ? validator.check(body) : body,
            identity,
            remoteAddress: req.socket.remoteAddress ?? '',
          },
          options.services,
        );
        send(res, reply);
      } catch (error) {
        fail(error, req, res, route);
      }
    };
    app.add(route.method, route.path, serve);
    // RFC 9110 §9.3.2: HEAD is GET without the body (Node drops the body by itself).
    if (route.method === 'GET') app.add('HEAD', route.path, serve);
  }

  /** No route for this method and path: a CORS preflight, 405 with `Allow`, or 404. */
  function answerUnmatched(req: Request, res: ServerResponse): void {
    applyHeaders(res, defaultHeaders);
    const routesOfPath = pathPatterns.filter(({ pattern }) => pattern.test(req.path));
    const allowed = [...new Set(routesOfPath.map(({ method }) => method))];
    const cors = corsFor(routesOfPath.map(({ route }) => route));
    if (req.method === 'OPTIONS' && allowed.length > 0) {
      answerPreflight(req, res, cors, allowed);
      return;
    }
    applyCors(req, res, cors);
    // A 405 is written in the path's error format: on the token endpoint, with an OAuth `error`.
    const error = allowed.length > 0 ? new MethodNotAllowed(allowed) : new NotFound();
    fail(error, req, res, routesOfPath[0]?.route);
  }

  /**
   * The CORS policy of a path's routes. Pages (`errors: 'page'`) are for top-level navigation
   * only: no script of another origin may read them, nor be let by a preflight to post to them.
   */
  function corsFor(routes: readonly AnyRoute[]): CorsPolicy {
    return routes.length > 0 && routes.every((route) => route.errors === 'page') ? NO_CORS : options.cors;
  }

  function fail(
    error: unknown,
    req: IncomingMessage,
    res: ServerResponse,
    route: AnyRoute | undefined,
  ): void {
    if (res.headersSent) {
      res.destroy();
    } else {
      writeProblem(res, error, route?.errors);
    }
    if (!(error instanceof Problem)) options.onUnexpectedError(error, req, route);
  }

  return (req, res) => app.handler(req as Request, res, undefined as never);
}

const NO_CORS: CorsPolicy = { origins: [], maxAge: 0 };

function send(res: ServerResponse, reply: Reply): void {
  res.statusCode = reply.status;
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  if (reply.body === undefined && reply.text === undefined && reply.bytes === undefined) {
    res.end();
    return;
  }
  res.setHeader('Content-Type', reply.contentType ?? 'application/json');
  res.end(reply.bytes ?? reply.text ?? JSON.stringify(reply.body));
}
