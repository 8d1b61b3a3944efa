import { type ServerResponse, STATUS_CODES } from 'node:http';
import { Problem } from '../errors.ts';
import { errorPage, HTML, pageHeaders } from './pages/page.ts';

export const PROBLEM_JSON = 'application/problem+json';

/**
 * How a route writes its failures. `problem` (the default): RFC 9457
 * application/problem+json. `oauth`: an RFC 6749 token endpoint, whose errors (§5.2) are
 * application/json, always carry an `error` code and are never cached; standard OAuth
 * clients (openid-client among them) refuse any other media type there. `page`: a page a
 * person reads in a browser, which says what went wrong as a page.
 */
export type ErrorFormat = 'problem' | 'oauth' | 'page';

/** RFC 6749 §5.1/§5.2: token endpoint answers, successes and errors alike, are never cached. */
export const NOT_CACHED: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
};

/**
 * The one place a failure becomes an error body: the problem members `type`, `title`,
 * `status`, `detail`, plus the RFC 6749 §5.2 / RFC 6750 §3.1 members `error` and
 * `error_description` for OAuth failures. Anything that is not a Problem is a bug: the
 * client gets a generic 500, never its message.
 */
export function writeProblem(res: ServerResponse, error: unknown, format: ErrorFormat = 'problem'): void {
  const problem = error instanceof Problem ? error : new Problem(500, 'An unexpected error occurred');
  if (format === 'page') {
    writePage(res, problem);
    return;
  }
  const body: Record<string, unknown> = {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail: problem.detail,
    ...problem.extensions,
  };
  const oauthError =
    problem.oauthError ?? (format === 'oauth' ? tokenEndpointError(problem.status) : undefined);
  if (oauthError) {
    body.error = oauthError;
    body.error_description = errorDescription(problem.detail);
  }
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  if (format === 'oauth') for (const [name, value] of Object.entries(NOT_CACHED)) res.setHeader(name, value);
  if (problem.status === 413) res.setHeader('Connection', 'close');
  res.statusCode = problem.status;
  res.setHeader('Content-Type', format === 'oauth' ? 'application/json' : PROBLEM_JSON);
  res.end(JSON.stringify(body));
}

function writePage(res: ServerResponse, problem: Problem): void {
  for (const [name, value] of Object.entries({ ...problem.headers, ...pageHeaders() }))
    res.setHeader(name, value);
  if (problem.status === 413) res.setHeader('Connection', 'close');
  res.statusCode = problem.status;
  res.setHeader('Content-Type', HTML);
  const title = problem.status < 500 ? 'This page cannot go on' : 'This page is not available right now';
  res.end(errorPage(title, problem.detail));
}

/**
 * The code of a token endpoint failure that has none of its own: the client's request is at
 * fault for any 4xx (a body that is not JSON, too large, of an unsupported type); for
 * failures of the server, the two codes RFC 6749 §4.1.2.1 defines, as node-oidc-provider
 * also answers them at its token endpoint.
 */
function tokenEndpointError(status: number): string {
  if (status === 503) return 'temporarily_unavailable';
  return status >= 500 ? 'server_error' : 'invalid_request';
}

/** RFC 6749 §5.2: error_description holds printable ASCII without `"` and `\`. */
function errorDescription(detail: string): string {
  return detail.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?');
}
