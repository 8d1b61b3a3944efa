import { Type } from '@sinclair/typebox';
import { ACCOUNT_STATUSES, ADMIN_ROLES } from '../accounts/model.ts';
import { Literals } from '../validation.ts';
import { PROBLEM_JSON } from './problem.ts';
import type { HeaderSpec, ResponseSpec } from './route.ts';

/** Shapes shared by routes: what the OpenAPI description shows and the pipeline checks. */

/** A plain message: what a request that sends mail answers. */
export const MessageSchema = Type.Object({ message: Type.String() }, { $id: 'Message' });

/** RFC 9457 §3.1, with `type` always `about:blank` so far. */
const problemMembers = {
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
};

export const ProblemSchema = Type.Object(
  {
    ...problemMembers,
    error: Type.Optional(Type.String({ description: 'RFC 6750 §3.1 error code' })),
    error_description: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
  },
  { $id: 'Problem' },
);

/** RFC 6749 §5.2: a token endpoint error, application/json, with the problem members beside the code. */
export const TokenErrorSchema = Type.Object(
  {
    ...problemMembers,
    error: Type.String({
      description:
        'invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type, ' +
        'invalid_scope; server_error or temporarily_unavailable when the server fails',
    }),
    error_description: Type.String(),
  },
  { $id: 'TokenError' },
);

export const AccountSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    identity: Type.String(),
    firstName: Type.Union([Type.String(), Type.Null()]),
    lastName: Type.Union([Type.String(), Type.Null()]),
    status: Literals(ACCOUNT_STATUSES),
    roles: Type.Array(Literals(ADMIN_ROLES)),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    _links: Type.Object({
      self: Type.Object({ href: Type.String() }),
      avatar: Type.Optional(
        Type.Object({ href: Type.String() }, { description: "The user's avatar, when they have one" }),
      ),
    }),
  },
  { $id: 'Account' },
);

export const TokenResponseSchema = Type.Object(
  {
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer(),
    access_token: Type.String(),
    refresh_token: Type.Optional(Type.String()),
  },
  { $id: 'TokenResponse' },
);

/** `Location` of a 201: where the created resource lives. */
export const LOCATION: Readonly<Record<string, HeaderSpec>> = {
  Location: {
    description: 'The path of the created resource',
    schema: Type.String({ format: 'uri-reference' }),
    required: true,
  },
};

/** RFC 6750 §3: the challenge of a 401 on a route that needs an access token. */
const BEARER_CHALLENGE: Readonly<Record<string, HeaderSpec>> = {
  'WWW-Authenticate': {
    description:
      'RFC 6750 §3: `Bearer` without a token; `Bearer error="invalid_token", error_description="…"` with one',
    schema: Type.String({ pattern: '^Bearer( |$)' }),
    required: true,
  },
};

/** The problem responses every route may give, by status. */
export function problems(...statuses: number[]): Record<number, ResponseSpec> {
  const descriptions: Record<number, string> = {
    400: 'Malformed request or failed validation',
    401: 'Missing, invalid or expired credentials',
    403: 'The caller may not do this',
    404: 'No such resource',
    409: 'Conflicts with an existing resource',
    413: 'Request body too large',
    415: 'Unsupported content type',
    503: 'A backend or the mail transport is unavailable',
  };
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: descriptions[status] ?? 'Error',
        schema: ProblemSchema,
        contentType: PROBLEM_JSON,
        ...(status === 401 ? { headers: BEARER_CHALLENGE } : {}),
      },
    ]),
  );
}
