import type { IncomingMessage, ServerResponse } from 'node:http';
import { addVary, applyHeaders, type HeaderSet, varyOf, withVaryField } from './headers.ts';

export interface CorsPolicy {
  origins: readonly string[] | '*';
  maxAge: number;
}

const ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type, Accept, Error-Reporting-Token';
/** What browser script may read beyond the CORS-safelisted response headers. */
const EXPOSED_RESPONSE_HEADERS = 'Location, WWW-Authenticate, Deprecation, Sunset, Link';

/** The CORS headers of an actual (non-preflight) response; a disallowed origin gets none. */
export function applyCors(req: IncomingMessage, res: ServerResponse, policy: CorsPolicy): void {
  applyHeaders(res, corsHeaders(req, policy, varyOf(res)));
}

/**
 * What CORS adds to an actual (non-preflight) response whose `Vary` so far is `vary`: a `Vary`
 * naming Origin when the answer depends on it (see `allowedOrigin`), and for an allowed
 * origin the origin it may read the answer from and the headers its script may read.
 */
export function corsHeaders(req: IncomingMessage, policy: CorsPolicy, vary: string | undefined): HeaderSet {
  if (policy.origins === '*') return ANY_ORIGIN;
  if (policy.origins.length === 0) return [];
  const varies: readonly [string, string] = ['Vary', withVaryField(vary, 'Origin')];
  const origin = req.headers.origin;
  return origin !== undefined && policy.origins.includes(origin)
    ? [varies, ['Access-Control-Allow-Origin', origin], EXPOSED]
    : [varies];
}

const EXPOSED = ['Access-Control-Expose-Headers', EXPOSED_RESPONSE_HEADERS] as const;
const ANY_ORIGIN: HeaderSet = [['Access-Control-Allow-Origin', '*'], EXPOSED];

/** Answers an OPTIONS request for a known path: a CORS preflight when it asks for a method. */
export function answerPreflight(
  req: IncomingMessage,
  res: ServerResponse,
  policy: CorsPolicy,
  allowedMethods: readonly string[],
): void {
  res.setHeader('Allow', allowedMethods.join(', '));
  if (!req.headers['access-control-request-method']) {
    applyCors(req, res, policy);
  } else {
    const allowOrigin = allowedOrigin(req, res, policy);
    if (allowOrigin) {
      res.setHeader('Access-Control-Allow-Origin', allowOrigin);
      res.setHeader('Access-Control-Allow-Methods', allowedMethods.join(', '));
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_REQUEST_HEADERS);
      res.setHeader('Access-Control-Max-Age', String(policy.maxAge));
    }
  }
  res.statusCode = 204;
  res.end();
}

/**
 * The `Access-Control-Allow-Origin` value for this request, if its origin may read the answer.
 * `*` answers every request alike, with or without an Origin, so a shared cache may hand any
 * response to anyone. A list answers by Origin, so every response says it varies by Origin
 * (allowed or not, or absent): otherwise a cache could hand one origin's answer, or one
 * without CORS headers, to an allowed origin (Fetch standard, "CORS protocol and HTTP caches").
 */
function allowedOrigin(req: IncomingMessage, res: ServerResponse, policy: CorsPolicy): string | undefined {
  if (policy.origins === '*') return '*';
  if (policy.origins.length === 0) return undefined;
  addVary(res, 'Origin');
  const origin = req.headers.origin;
  return origin !== undefined && policy.origins.includes(origin) ? origin : undefined;
}
