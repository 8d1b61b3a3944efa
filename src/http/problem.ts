import { type ServerResponse, STATUS_CODES } from 'node:http';
import { Problem } from '../errors.ts';

export const PROBLEM_JSON = 'application/problem+json';

/**
 * The one place a failure becomes an RFC 9457 problem. OAuth failures also carry the RFC 6749
 * §5.2 members so standard OAuth clients (which read any +json body) still find them.
 * Anything that is not a Problem is a bug: the client gets a generic 500, never its message.
 */
export function writeProblem(res: ServerResponse, error: unknown): void {
  const problem = error instanceof Problem ? error : new Problem(500, 'An unexpected error occurred');
  const body: Record<string, unknown> = {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail: problem.detail,
    ...problem.extensions,
  };
  if (problem.oauthError) {
    body.error = problem.oauthError;
    body.error_description = problem.detail;
  }
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  if (problem.status === 413) res.setHeader('Connection', 'close');
  res.statusCode = problem.status;
  res.setHeader('Content-Type', PROBLEM_JSON);
  res.end(JSON.stringify(body));
}
