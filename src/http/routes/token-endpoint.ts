import { type TSchema, Type } from '@sinclair/typebox';
import type { GrantHandler } from '../../oauth/grants/grant.ts';
import type { GrantType } from '../../oauth/model.ts';
import { enabledGrants } from '../../oauth/token-endpoint.ts';
import { NOT_CACHED } from '../problem.ts';
import { type AnyRoute, defineRoute, type HeaderSpec, type ResponseSpec } from '../route.ts';
import { problems, TokenErrorSchema, TokenResponseSchema } from '../schemas.ts';

/** RFC 6749 §5.1/§5.2: every answer of the token endpoint, success or error, says so. */
const NOT_CACHED_HEADERS: Record<string, HeaderSpec> = Object.fromEntries(
  Object.entries(NOT_CACHED).map(([name, value]) => [
    name,
    { description: 'Token endpoint answers are never cached', schema: Type.Literal(value), required: true },
  ]),
);

/** RFC 6749 §5.2: the challenge of `invalid_client` when the client authenticated with HTTP Basic. */
const BASIC_CHALLENGE: Record<string, HeaderSpec> = {
  'WWW-Authenticate': {
    description:
      'Only when the client sent HTTP Basic credentials: `Basic realm="token", …, error="invalid_client"`',
    schema: Type.String({ pattern: '^Basic ' }),
    required: false,
  },
};

/** RFC 6749 §5.2: the token endpoint's errors, a 500 too, are application/json with the problem members. */
const TOKEN_ERRORS: Record<number, ResponseSpec> = Object.fromEntries(
  Object.entries({
    ...problems(400, 401, 413, 415, 503),
    500: { description: 'Unexpected error (`server_error`); the details go to the error log only' },
  }).map(([status, spec]) => [
    status,
    {
      description: spec.description,
      schema: TokenErrorSchema,
      contentType: 'application/json',
      headers: { ...NOT_CACHED_HEADERS, ...(status === '401' ? BASIC_CHALLENGE : {}) },
    },
  ]),
);

/**
 * The token request: one of the enabled grants' parameters, told apart by `grant_type`, as
 * JSON or as a form. It describes the body; the token endpoint checks it (see checkedBy).
 */
function tokenRequestSchema(grants: readonly GrantHandler[]): TSchema {
  if (grants.length === 0) return Type.Object({ grant_type: Type.String() });
  return Type.Unsafe({
    oneOf: grants.map((grant) => grant.parameters),
    discriminator: { propertyName: 'grant_type' },
    description:
      'Client credentials go in the body (client_id, client_secret) or in an HTTP Basic ' +
      'Authorization header (RFC 6749 §2.3.1).',
  });
}

/** `grant_type password, refresh_token or client_credentials`. */
function grantList(grants: readonly GrantHandler[]): string {
  const names = grants.map((grant) => grant.type);
  const last = names.pop();
  if (last === undefined) return 'no grant is enabled';
  return `grant_type ${names.length > 0 ? `${names.join(', ')} or ${last}` : last}`;
}

/**
 * The token endpoint's routes by name, for those who look their paths up: the one where tokens
 * are issued, and the one clients refresh at (both accept every enabled grant).
 */
export const TOKEN_ROUTE = 'security::generate-token';
export const REFRESH_ROUTE = 'security::refresh-token';

/**
 * Both token routes are served by the one token endpoint, which dispatches on `grant_type`;
 * what they accept depends on the grants the configuration enables.
 */
export function tokenRoutes(enabled: ReadonlySet<GrantType>): AnyRoute[] {
  const grants = enabledGrants(enabled);
  const route = (path: string, name: string, summary: string) =>
    defineRoute<TSchema>({
      method: 'POST',
      path,
      name,
      summary: `${summary} (${grantList(grants)})`,
      tags: ['security'],
      permission: 'public',
      body: tokenRequestSchema(grants),
      bodyMediaTypes: ['application/json', 'application/x-www-form-urlencoded'],
      checkedBy: 'handler',
      errors: 'oauth',
      responses: {
        200: { description: 'Tokens issued', schema: TokenResponseSchema, headers: NOT_CACHED_HEADERS },
        ...TOKEN_ERRORS,
      },
      handler: async ({ body, req }, { tokenEndpoint }) => ({
        status: 200,
        body: await tokenEndpoint(body, req.headers.authorization),
        headers: NOT_CACHED,
      }),
    });
  return [
    route('/security/generate-token', TOKEN_ROUTE, 'Exchange credentials for tokens'),
    route('/security/refresh-token', REFRESH_ROUTE, 'Exchange a refresh token for new tokens'),
  ];
}
