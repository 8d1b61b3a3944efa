import type { IncomingMessage, ServerResponse } from 'node:http';

export interface CorsPolicy {
  origins: readonly string[] | '*';
  maxAge: number;
}

const ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type, Accept, Error-Reporting-Token';

/** Adds the CORS response headers for an allowed `Origin`; a disallowed origin simply gets none. */
export function applyCors(req: IncomingMessage, res: ServerResponse, policy: CorsPolicy): boolean {
  const origin = req.headers.origin;
  if (!origin || !isAllowed(origin, policy)) return false;
  res.setHeader('Access-Control-Allow-Origin', policy.origins === '*' ? '*' : origin);
  if (policy.origins !== '*') res.setHeader('Vary', 'Origin');
  return true;
}

/** Answers a preflight request (OPTIONS with Access-Control-Request-Method) for a known path. */
export function answerPreflight(
  req: IncomingMessage,
  res: ServerResponse,
  policy: CorsPolicy,
  allowedMethods: readonly string[],
): void {
  res.setHeader('Allow', allowedMethods.join(', '));
  if (req.headers['access-control-request-method'] && applyCors(req, res, policy)) {
    res.setHeader('Access-Control-Allow-Methods', allowedMethods.join(', '));
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_REQUEST_HEADERS);
    res.setHeader('Access-Control-Max-Age', String(policy.maxAge));
  }
  res.statusCode = 204;
  res.end();
}

function isAllowed(origin: string, policy: CorsPolicy): boolean {
  return policy.origins === '*' || policy.origins.includes(origin);
}
