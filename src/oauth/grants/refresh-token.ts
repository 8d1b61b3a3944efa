import { type Static, Type } from '@sinclair/typebox';
import { InvalidGrant, InvalidScope } from '../../errors.ts';
import type { OAuthClient, RefreshTokenGrant } from '../model.ts';
import type { RefreshTokenHold } from '../refresh-token.ts';
import { isWithin, resolveScope } from '../scope.ts';
import {
  clientParameters,
  type Grant,
  type GrantDependencies,
  issueTokens,
  parameterValidator,
  type TokenResponse,
} from './grant.ts';

const parameters = Type.Object(
  {
    grant_type: Type.Literal('refresh_token'),
    ...clientParameters,
    scope: Type.Optional(
      Type.String({
        description: 'Must not exceed the scope originally granted; omitted, it is that scope.',
      }),
    ),
    refresh_token: Type.String({ minLength: 1, maxLength: 512 }),
  },
  { $id: 'RefreshTokenGrantRequest' },
);
const validate = parameterValidator<Static<typeof parameters>>(parameters);

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2): every refresh consumes
 * the presented token and issues a new one in the same family; a token presented again after
 * it was rotated means it leaked, so the whole family is revoked. A refusal that means no
 * leak never burns the token: what can be checked before the consume is, and a refusal
 * after it gives the token back unused.
 */
export const refreshTokenGrant: Grant = {
  type: 'refresh_token',
  parameters,
  async handle(params, client, deps) {
    const { refresh_token: token, scope: requestedScope } = validate.check(params);
    // RFC 6749 §6: an omitted scope means the scope originally granted.
    const requested =
      requestedScope === undefined ? undefined : await resolveScope(requestedScope, deps.scopes);
    const result = await deps.refreshTokens.consumeRefreshToken(token);
    if (result.outcome === 'unknown' || result.outcome === 'revoked')
      throw new InvalidGrant('Invalid refresh token');
    // Another request is refreshing with this very token (a double submit): it wins, this one
    // fails, and nothing is revoked, since nothing leaked.
    if (result.outcome === 'in-flight') throw new InvalidGrant('Refresh token is already being used');
    // The store revoked the family with this verdict.
    if (result.outcome === 'reused') throw new InvalidGrant('Refresh token already used');
    const { grant, hold } = result;
    // RFC 6749 §10.4: the token is bound to its client. Another client holding it means it leaked.
    if (grant.clientId !== client.id) {
      await deps.refreshTokens.revokeFamily(grant.familyId);
      throw new InvalidGrant('Refresh token was issued to another client');
    }
    try {
      return await rotate(grant, requested ?? grant.scope, hold, client, deps);
    } catch (error) {
      // The client may retry (an outage) or will hear the same refusal again: either way the
      // token is not burnt, not even when the rotation landed but its reply was lost. Should
      // the store fail here too, the refusal is still what is told, and the lease frees the token.
      await deps.refreshTokens.releaseRefreshToken(hold).catch(() => undefined);
      throw error;
    }
  },
};

/**
 * The checks that need the stored grant, then the new tokens in the same family. A narrower
 * scope narrows the access token only: the successor keeps the family's scope (RFC 6749 §6).
 */
async function rotate(
  grant: RefreshTokenGrant,
  scope: string,
  hold: RefreshTokenHold,
  client: OAuthClient,
  deps: GrantDependencies,
): Promise<TokenResponse> {
  if (!isWithin(scope, grant.scope)) throw new InvalidScope();
  const account = await deps.sessions.resume(
    grant.accountKind,
    grant.subject,
    grant.credentialStamp,
    () => new InvalidGrant(),
  );
  return issueTokens(deps, {
    subject: { kind: grant.accountKind, id: account.id },
    client,
    scope,
    credentialStamp: grant.credentialStamp,
    rotates: hold,
    withRefreshToken: true,
  });
}
