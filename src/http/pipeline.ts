import type { IncomingMessage, ServerResponse } from 'node:http';
import polka, { type Middleware, type Request } from 'polka';
import { type Caller, requirePermission } from '../caller.ts';
import { BadRequest, MethodNotAllowed, NotFound, Problem } from '../errors.ts';
import { compileValidator } from '../validation.ts';
import { parseBody, searchParamsObject } from './body.ts';
import { answerPreflight, applyCors, type CorsPolicy, corsHeaders } from './cors.ts';
import {
  addVary,
  applyHeaders,
  type Deprecation,
  type HeaderSet,
  headersForRoute,
  withVary,
} from './headers.ts';
import { asksForPage } from './negotiation.ts';
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
  authenticate(authorization: string | undefined): Promise<Caller>;
  /** Called with every error that is not a Problem, i.e. a bug; the client only sees a generic 500. */
  onUnexpectedError(error: unknown, req: IncomingMessage, route: AnyRoute | undefined): void;
}

/**
 * The route answering a request, for a failure to write its answer: where a page sits beside
 * an API route, the first route matching the path may have handed the request on. A property
 * of the request rather than a WeakMap entry, which costs more to add on every request.
 */
const ANSWERING = Symbol('answering route');
type Answered = IncomingMessage & { [ANSWERING]?: AnyRoute };

/** A route of the table, as polka dispatches to it. */
interface Entry {
  route: AnyRoute;
  /** Its place in the table: the first route that matches answers. */
  index: number;
  /** Answers the request, or hands it on to the next route that matches (`next`). */
  serve: Middleware<Request>;
}

/**
 * The HTTP pipeline, in order. polka matches the route; then, for that route:
 * body parsing → authentication (the caller, or a guest) → permission check (role vs the route's
 * permission) → body validation → handler → the response with the route's headers and CORS,
 * with every failure turned into problem+json in one place.
 */
export function createRequestHandler(
  options: PipelineOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const defaultHeaders = headersForRoute(undefined, options.responseHeaders, undefined);
  // A path with a page beside its API answers a GET by its Accept (negotiation.ts): every
  // answer there says so, the page's, the API's and a 405's alike, or a cache could hand one
  // to the other (RFC 9110 §12.5.5).
  const negotiated = new Set(
    options.routes.filter((route) => route.forBrowsers && route.method === 'GET').map(({ path }) => path),
  );
  const app = polka<Request>({
    onNoMatch: (req, res) => answerUnmatched(req, res),
    onError: (error, req, res) => {
      // serve answers every failure itself; this only sees a failure to write that answer.
      res.destroy();
      options.onUnexpectedError(error, req, (req as Answered)[ANSWERING]);
    },
  });
  const entries = new Map<Middleware<Request>, Entry>();
  options.routes.forEach((route, index) => {
    // The route is served with the pattern trouter compiles when it is added: so it is added
    // first, and its server made right after.
    let serve: ReturnType<typeof serverOf> = async () => undefined;
    // A page beside an API route takes only a browser's requests; polka hands the others on.
    const entry: Entry = {
      route,
      index,
      serve: route.forBrowsers
        ? (req, res, next) => (admits(route, req) ? serve(req, res) : next())
        : (req, res) => serve(req, res),
    };
    entries.set(entry.serve, entry);
    // trouter answers HEAD with the GET routes (RFC 9110 §9.3.2: HEAD is GET without the body,
    // which Node drops by itself).
    app.add(route.method, route.path, entry.serve);
    serve = serverOf(route, compiledLast(app));
  });
  const tableMethods = [...new Set(options.routes.map(({ method }) => method))];

  /** The routes of every method whose pattern matches this path, in table order. */
  function routesOfPath(path: string): Entry[] {
    const found = tableMethods.flatMap((method) => app.find(method, path).handlers);
    return found.flatMap((serve) => entries.get(serve) ?? []).sort((a, b) => a.index - b.index);
  }

  function serverOf(
    route: AnyRoute,
    compiled: Compiled,
  ): (req: Request, res: ServerResponse) => Promise<void> {
    const configured = headersForRoute(route.name, options.responseHeaders, options.deprecations[route.name]);
    const headers = negotiated.has(route.path) ? withVary(configured, 'Accept') : configured;
    const cors = corsFor([route]);
    const written = routeHeaders(headers, cors);
    const checked = route.checkedBy !== 'handler';
    const validator = route.body && checked ? compileValidator(route.body) : undefined;
    const queryValidator =
      route.query && checked
        ? compileValidator(route.query, (errors) => new BadRequest('The query is invalid', { errors }))
        : undefined;

    const parameters = parametersOf(compiled);
    return async (req, res) => {
      (req as Answered)[ANSWERING] = route;
      try {
        // Most requests (every GET) carry no body: no call into the body parser's async path.
        const body =
          route.upload || !carriesBody(req)
            ? undefined
            : await parseBody(req, options.bodyLimit, route.bodyMediaTypes);
        const caller =
          route.permission === 'public'
            ? { role: 'guest' as const }
            : await options.authenticate(req.headers.authorization);
        requirePermission(caller, route.permission);
        const query = new URLSearchParams(req.search);
        queryValidator?.check(searchParamsObject(query));
        const reply = await route.handler(
          {
            req,
            res,
            params: parameters(req.path),
            query,
            body: validator ? validator.check(body) : body,
            caller,
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
    const added: string[] = [];
    for (const [name, value] of corsHeaders(req, route.cors, undefined)) added.push(name, value);
    if (reply.headers) for (const [name, value] of Object.entries(reply.headers)) added.push(name, value);
    if (body !== undefined)
      added.push(
        'Content-Type',
        reply.contentType ?? 'application/json',
        'Content-Length',
        String(Buffer.byteLength(body)),
      );
    if (!namesNew(route.names, added)) {
      sendOneByOne(req, res, reply, route);
      return;
    }
    res.writeHead(reply.status, route.flat.concat(added));
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
  function answerUnmatched(req: Request, res: ServerResponse): void {
    applyHeaders(res, defaultHeaders);
    const ofPath = routesOfPath(req.path).map(({ route }) => route);
    if (ofPath.some(({ path }) => negotiated.has(path))) addVary(res, 'Accept');
    const routes = ofPath.filter((route) => admits(route, req, route.method));
    const allowed = [
      ...new Set(routes.flatMap(({ method }) => (method === 'GET' ? ['GET', 'HEAD'] : [method]))),
    ];
    const cors = corsFor(routes);
    if (req.method === 'OPTIONS' && allowed.length > 0) {
      answerPreflight(req, res, cors, allowed);
      return;
    }
    applyCors(req, res, cors);
    // A 405 is written in the path's error format: on the token endpoint, with an OAuth `error`.
    const error = allowed.length > 0 ? new MethodNotAllowed(allowed) : new NotFound();
    fail(error, req, res, routes[0]);
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

  // polka's types make `next` required; without one, polka answers with onNoMatch and onError.
  return (req, res) => void app.handler(req as Request, res, undefined as never);
}

/** Whether a route takes this request, were it of `method`: a page beside an API route takes only a browser's. */
function admits(route: AnyRoute, req: IncomingMessage, method = req.method ?? ''): boolean {
  return !route.forBrowsers || asksForPage(req, method);
}

/** What trouter keeps of a route it was given (not in its types): the names and the compiled pattern. */
interface Compiled {
  keys: readonly string[];
  pattern: RegExp;
}

/** The pattern trouter compiled for the route just added to `app`. */
function compiledLast(app: object): Compiled {
  const routes: unknown = Reflect.get(app, 'routes');
  const last: unknown = Array.isArray(routes) ? routes.at(-1) : undefined;
  const keys: unknown = last && Reflect.get(last, 'keys');
  const pattern: unknown = last && Reflect.get(last, 'pattern');
  if (!Array.isArray(keys) || !(pattern instanceof RegExp)) {
    throw new Error('trouter no longer keeps each route as { keys, pattern }: see parametersOf');
  }
  return { keys, pattern };
}

/**
 * What a route's parameters are on a path it matches. polka hands a request the parameters of
 * every route of the table whose pattern matches its path, merged, a later route's value
 * replacing an earlier one's of the same name (`/users/:id`, then `/:id/:action`): so the route
 * that answers reads its own, by one exec of the pattern trouter compiled for it. Percent-escapes
 * are decoded as polka decodes them; a malformed one is left as sent.
 */
function parametersOf({ keys, pattern }: Compiled): (path: string) => Record<string, string> {
  if (keys.length === 0) return () => ({});
  return (path) => {
    const params: Record<string, string> = {};
    const match = pattern.exec(path);
    if (match === null) return params;
    const decode = path.includes('%');
    keys.forEach((name, i) => {
      const value = match[i + 1];
      if (value !== undefined) params[name] = decode ? decodeSegment(value) : value;
    });
    return params;
  };
}

function decodeSegment(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const NO_CORS: CorsPolicy = { origins: [], maxAge: 0 };

/** RFC 9112 §6.3: a request without Content-Length or Transfer-Encoding has no body. */
function carriesBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
}

/** Whether the names of `added` (name, value, name, value…) are distinct, and none of them is in `given`. */
function namesNew(given: ReadonlySet<string>, added: readonly string[]): boolean {
  for (let i = 0; i < added.length; i += 2) {
    const name = (added[i] ?? '').toLowerCase();
    if (given.has(name)) return false;
    for (let j = 0; j < i; j += 2) if ((added[j] ?? '').toLowerCase() === name) return false;
  }
  return true;
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
