import { type Static, Type } from '@sinclair/typebox';
import { InvalidGrant, InvalidScope } from '../../errors.ts';
import { isWithin, resolveScope } from '../scope.ts';
import { clientParameters, type Grant, issueTokens, parameterValidator } from './grant.ts';

const parameters = Type.Object({
  grant_type: Type.Literal('refresh_token'),
  ...clientParameters,
  scope: Type.String({ description: 'Must not exceed the scope originally granted.' }),
  refresh_token: Type.String({ minLength: 1, maxLength: 512 }),
});
const validate = parameterValidator<Static<typeof parameters>>(parameters);

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2): every refresh consumes
 * the presented token and issues a new one in the same family; a token presented a second
 * time means it leaked, so the whole family is revoked.
 */
export const refreshTokenGrant: Grant = {
  type: 'refresh_token',
  parameters,
  async handle(params, client, deps) {
    const { refresh_token: token, scope: requestedScope } = validate.check(params);
    const scope = await resolveScope(requestedScope, deps.stores.scopes);
    const result = await deps.refreshTokens.consumeRefreshToken(token);
    if (result.outcome === 'unknown' || result.outcome === 'revoked')
      throw new InvalidGrant('Invalid refresh token');
    const { grant } = result;
    if (result.outcome === 'reused') {
      await deps.refreshTokens.revokeFamily(grant.familyId);
      throw new InvalidGrant('Refresh token already used');
    }
    // RFC 6749 §10.4: the token is bound to its client. Another client holding it means it leaked.
    if (grant.clientId !== client.id) {
      await deps.refreshTokens.revokeFamily(grant.familyId);
      throw new InvalidGrant('Refresh token was issued to another client');
    }
    if (!isWithin(scope, grant.scope)) throw new InvalidScope();
    const accounts = grant.accountKind === 'admin' ? deps.stores.admins : deps.stores.users;
    const account = await accounts.findById(grant.subject);
    if (account?.status !== 'active') throw new InvalidGrant('Invalid credentials');
    return issueTokens(deps, {
      subject: { kind: grant.accountKind, id: account.id },
      client,
      scope,
      familyId: grant.familyId,
      withRefreshToken: true,
    });
  },
};
