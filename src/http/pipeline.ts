import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequest, MethodNotAllowed, NotFound, Problem } from '../errors.ts';
import { type Identity, requirePermission } from '../identity.ts';
import { compileValidator } from '../validation.ts';
import { parseBody, searchParamsObject } from './body.ts';
import { answerPreflight, applyCors, type CorsPolicy, corsHeaders } from './cors.ts';
import { applyHeaders, type Deprecation, type HeaderSet, headersForRoute } from './headers.ts';
import { asksForPage } from './negotiation.ts';
import { writeProblem } from './problem.ts';
import type { AnyRoute, Reply, Services } from './route.ts';
import { createRouter, splitTarget } from './router.ts';

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

type Serve = (
  req: IncomingMessage,
  res: ServerResponse,
  search: string,
  params: Record<string, string>,
) => Promise<void>;

/**
 * The HTTP pipeline, in order. The router matches the route; then, for that route:
 * body parsing → authentication (identity or guest) → permission check (role vs the route's
 * permission) → body validation → handler → the response with the route's headers and CORS,
 * with every failure turned into problem+json in one place.
 */
export function createRequestHandler(
  options: PipelineOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const defaultHeaders = headersForRoute(undefined, options.responseHeaders, undefined);
  const router = createRouter(
    options.routes.flatMap((route) => {
      const serve = serverOf(route);
      // RFC 9110 §9.3.2: HEAD is GET without the body (Node drops the body by itself).
      const methods = route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
      return methods.map((method) => ({ method, path: route.path, route: { route, serve } }));
    }),
  );

  function serverOf(route: AnyRoute): Serve {
    const headers = headersForRoute(route.name, options.responseHeaders, options.deprecations[route.name]);
    const cors = corsFor([route]);
    const written = routeHeaders(headers, cors);
    const checked = route.checkedBy !== 'handler';
    const validator = route.body && checked ? compileValidator(route.body) : undefined;
    const queryValidator =
      route.query && checked
        ? compileValidator(route.query, (errors) => new BadRequest('The query is invalid', { errors }))
        : undefined;

    return async (req, res, search, params) => {
      try {
        // Most requests (every GET) carry no body: no call into the body parser's async path.
        const body =
          route.upload || !carriesBody(req)
            ? undefined
            : await parseBody(req, options.bodyLimit, route.bodyMediaTypes);
        const identity =
          route.permission === 'public'
            ? { role: 'guest' as const }
            : await options.authenticate(req.headers.authorization);
        requirePermission(identity, route.permission);
        const query = new URLSearchParams(search);
        queryValidator?.check(searchParamsObject(query));
        const reply = await route.handler(
          {
            req,
            res,
            params,
            query,
            body: validator ? validator.check(body) : body,
            identity,
            remoteAddress: req.socket.remoteAddress ?? '',
          },
          options.services,
        );
        send(req, res, reply, written);
      } catch (error) {
        if (!res.headersSent) {
          applyHeaders(res, headers);
          applyCors(req, res, cors);
        }
        fail(error, req, res, route);
      }
    };
  }

  /**
   * The reply with the route's headers, CORS's, the reply's own and its Content-Type: all
   * given at once with the status line, which costs less than a setHeader each, while none
   * of them names a header already given. Otherwise one by one, the later replacing the
   * earlier, as the error path writes them too.
   */
  function send(req: IncomingMessage, res: ServerResponse, reply: Reply, route: RouteHeaders): void {
    const body = reply.text ?? (reply.body === undefined ? undefined : JSON.stringify(reply.body));
    const flat = route.flat.slice();
    const given = new Set(route.names);
    const add = (name: string, value: string): boolean => {
      const lower = name.toLowerCase();
      if (given.has(lower)) return false;
      given.add(lower);
      flat.push(name, value);
      return true;
    };
    const added =
      corsHeaders(req, route.cors, undefined).every(([name, value]) => add(name, value)) &&
      Object.entries(reply.headers ?? {}).every(([name, value]) => add(name, value)) &&
      (body === undefined ||
        (add('Content-Type', reply.contentType ?? 'application/json') &&
          add('Content-Length', String(Buffer.byteLength(body)))));
    if (!added) {
      sendOneByOne(req, res, reply, route);
      return;
    }
    res.writeHead(reply.status, flat);
    res.end(body);
  }

  function sendOneByOne(req: IncomingMessage, res: ServerResponse, reply: Reply, route: RouteHeaders): void {
    applyHeaders(res, route.headers);
    applyCors(req, res, route.cors);
    res.statusCode = reply.status;
    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
    if (reply.body === undefined && reply.text === undefined) {
      res.end();
      return;
    }
    res.setHeader('Content-Type', reply.contentType ?? 'application/json');
    res.end(reply.text ?? JSON.stringify(reply.body));
  }

  /** No route for this method and path: a CORS preflight, 405 with `Allow`, or 404. */
  function answerUnmatched(req: IncomingMessage, res: ServerResponse, path: string): void {
    applyHeaders(res, defaultHeaders);
    const routesOfPath = router
      .methodsOf(path)
      .filter(({ method, route }) => admits(route.route, req, method));
    const allowed = [...new Set(routesOfPath.map(({ method }) => method))];
    const cors = corsFor(routesOfPath.map(({ route }) => route.route));
    if (req.method === 'OPTIONS' && allowed.length > 0) {
      answerPreflight(req, res, cors, allowed);
      return;
    }
    applyCors(req, res, cors);
    // A 405 is written in the path's error format: on the token endpoint, with an OAuth `error`.
    const error = allowed.length > 0 ? new MethodNotAllowed(allowed) : new NotFound();
    fail(error, req, res, routesOfPath[0]?.route.route);
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

  return (req, res) => {
    const { path, search } = splitTarget(req.url ?? '/');
    const method = req.method ?? '';
    const matched = router.match(method, path, ({ route }) => admits(route, req, method));
    if (!matched) {
      answerUnmatched(req, res, path);
      return;
    }
    const { route, serve } = matched.route;
    // serve answers every failure itself; this only catches a failure to write that answer.
    serve(req, res, search, matched.params).catch((error: unknown) => {
      res.destroy();
      options.onUnexpectedError(error, req, route);
    });
  };
}

/** Whether a route takes this request, were it of `method`: a page beside an API route takes only a browser's. */
function admits(route: AnyRoute, req: IncomingMessage, method: string): boolean {
  return !route.forBrowsers || asksForPage(req, method);
}

const NO_CORS: CorsPolicy = { origins: [], maxAge: 0 };

/** RFC 9112 §6.3: a request without Content-Length or Transfer-Encoding has no body. */
function carriesBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
}

/** A route's own headers and CORS policy, in the forms `send` reads them. */
interface RouteHeaders {
  headers: HeaderSet;
  cors: CorsPolicy;
  /** The same, as writeHead takes them: name, value, name, value… */
  flat: readonly string[];
  /** Their names, lower-cased. */
  names: ReadonlySet<string>;
}

function routeHeaders(headers: HeaderSet, cors: CorsPolicy): RouteHeaders {
  return { headers, cors, flat: headers.flat(), names: new Set(headers.map(([name]) => name.toLowerCase())) };
}
