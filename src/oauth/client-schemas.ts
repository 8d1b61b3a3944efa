import { type Static, Type } from '@sinclair/typebox';
import { Literals } from '../validation.ts';
import { DEFAULT_SECRET_OVERLAP_SECONDS, MAX_SECRET_OVERLAP_SECONDS } from './client-secrets.ts';
import { CLIENT_TYPES, GRANT_TYPES } from './model.ts';
import { MAX_REDIRECT_URI_LENGTH } from './redirect-uri.ts';

/**
 * What the client service accepts (it checks every input with these, whoever calls it), and
 * what the client routes document as their bodies. They refuse unknown members. Rules that
 * span fields (a public client's grants, the redirect URIs the authorization code grant
 * needs) are the client service's.
 */

export const MAX_CLIENT_NAME_LENGTH = 64;

export const ClientName = Type.String({
  pattern: `^[A-Za-z0-9][A-Za-z0-9._-]{0,${MAX_CLIENT_NAME_LENGTH - 1}}$`,
  description: 'The client_id',
  errorMessage: `Must be 1 to ${MAX_CLIENT_NAME_LENGTH} letters, digits or . _ - characters, starting with a letter or digit`,
});

export const ClientTypeSchema = Literals(CLIENT_TYPES, {
  description: '`confidential`: has a secret; `public` (a browser or native app): has none',
});

export const RedirectUris = Type.Array(Type.String({ minLength: 1, maxLength: MAX_REDIRECT_URI_LENGTH }), {
  maxItems: 20,
  uniqueItems: true,
  description:
    'Exact redirect URIs of the authorization code grant: https, or http://127.0.0.1 or http://[::1] ' +
    '(any port) for a native app; the host a DNS name or an IP address, no port 0, no fragment. ' +
    'A public client may also use a private-use scheme, a reversed domain name with a path and no host (RFC 8252 §7.1): com.example.app:/oauth2redirect',
  errorMessage: 'Must be a list of at most 20 distinct URIs',
});

export const ClientGrants = Type.Array(Literals(GRANT_TYPES), {
  minItems: 1,
  uniqueItems: true,
  description: 'The grants the client may use',
  errorMessage: `Must be a non-empty list of distinct grants: ${GRANT_TYPES.join(', ')}`,
});

export const ClientAccounts = Literals(['user', 'admin'] as const, {
  description: 'The account store the client signs people in to',
});

export const CreateClientBody = Type.Object(
  {
    name: ClientName,
    type: ClientTypeSchema,
    redirectUris: Type.Optional(RedirectUris),
    grants: ClientGrants,
    accounts: ClientAccounts,
  },
  { additionalProperties: false, description: 'A new OAuth client' },
);

export const UpdateClientBody = Type.Object(
  {
    redirectUris: Type.Optional(RedirectUris),
    grants: Type.Optional(ClientGrants),
    rotateSecret: Type.Optional(
      Type.Boolean({
        description:
          'true: a new secret, shown once in the answer; the one before it is still accepted for ' +
          '`previousSecretOverlapSeconds`, and a previous one still accepted from an earlier rotation stops',
      }),
    ),
    previousSecretOverlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_SECRET_OVERLAP_SECONDS,
        default: DEFAULT_SECRET_OVERLAP_SECONDS,
        description:
          'With `rotateSecret`: how long the secret before the rotation is still accepted, in seconds; ' +
          '0: it stops now',
        errorMessage: `Must be a whole number of seconds from 0 to ${MAX_SECRET_OVERLAP_SECONDS}`,
      }),
    ),
    retirePreviousSecret: Type.Optional(
      Type.Boolean({
        description: 'true: the secret before the last rotation stops being accepted now',
      }),
    ),
  },
  { additionalProperties: false, description: 'The fields to change' },
);

export type NewClient = Static<typeof CreateClientBody>;
export type ClientUpdate = Static<typeof UpdateClientBody>;
