import { Type } from '@sinclair/typebox';

/** Response shapes shared by routes, for the OpenAPI description. */

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    error: Type.Optional(Type.String({ description: 'RFC 6749 §5.2 / RFC 6750 §3.1 error code' })),
    error_description: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
  },
  { $id: 'Problem' },
);

export const AccountSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    identity: Type.String(),
    firstName: Type.Union([Type.String(), Type.Null()]),
    lastName: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([
      Type.Literal('pending'),
      Type.Literal('active'),
      Type.Literal('inactive'),
      Type.Literal('deleted'),
    ]),
    roles: Type.Array(Type.Union([Type.Literal('admin'), Type.Literal('superuser')])),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    _links: Type.Object({ self: Type.Object({ href: Type.String() }) }),
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

/** The problem responses every route may give, by status. */
export function problems(
  ...statuses: number[]
): Record<number, { description: string; schema: typeof ProblemSchema; contentType: string }> {
  const descriptions: Record<number, string> = {
    400: 'Malformed request or failed validation',
    401: 'Missing, invalid or expired credentials',
    403: 'The identity may not do this',
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
        contentType: 'application/problem+json',
      },
    ]),
  );
}
