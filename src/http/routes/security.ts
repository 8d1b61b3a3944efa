import type { TokenEndpoint } from '../../oauth/token-endpoint.ts';
import { type AnyRoute, defineRoute } from '../route.ts';
import { problems, TokenResponseSchema } from '../schemas.ts';

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
      responses: {
        200: { description: 'Tokens issued', schema: TokenResponseSchema },
        ...problems(400, 401, 413, 415, 503),
      },
      handler: async ({ body, req }) => ({
        status: 200,
        body: await tokenEndpoint(body, req.headers.authorization),
        // RFC 6749 §5.1: responses carrying tokens must not be cached.
        headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
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
