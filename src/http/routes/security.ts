import type { TokenEndpoint } from '../../oauth/token-endpoint.ts';
import { NOT_CACHED } from '../problem.ts';
import { type AnyRoute, defineRoute, type ResponseSpec } from '../route.ts';
import { ProblemSchema, problems, TokenResponseSchema } from '../schemas.ts';

/** RFC 6749 §5.2: the token endpoint's errors, a 500 too, are application/json with the problem members. */
const TOKEN_ERRORS: Record<number, ResponseSpec> = Object.fromEntries(
  Object.entries({
    ...problems(400, 401, 413, 415, 503),
    500: { description: 'Unexpected error (`server_error`); the details go to the error log only' },
  }).map(([status, spec]) => [status, { ...spec, schema: ProblemSchema, contentType: 'application/json' }]),
);

/** Both token routes are served by the one token endpoint, which dispatches on `grant_type`. */
export function securityRoutes(tokenEndpoint: TokenEndpoint): AnyRoute[] {
  const route = (path: string, name: string, summary: string) =>
    defineRoute({
      method: 'POST',
      path,
      name,
      summary,
      tags: ['security'],
      permission: 'public',
      errors: 'oauth',
      responses: { 200: { description: 'Tokens issued', schema: TokenResponseSchema }, ...TOKEN_ERRORS },
      handler: async ({ body, req }) => ({
        status: 200,
        body: await tokenEndpoint(body, req.headers.authorization),
        headers: NOT_CACHED,
      }),
    });
  return [
    route(
      '/security/generate-token',
      'security::generate-token',
      'Exchange credentials for tokens (password grant)',
    ),
    route('/security/refresh-token', 'security::refresh-token', 'Exchange a refresh token for new tokens'),
  ];
}
