import { type Static, Type } from '@sinclair/typebox';
import { InvalidGrant, InvalidScope } from '../../errors.ts';
import type { Account, RefreshTokenGrant } from '../../stores/types.ts';
import type { PresentedRefreshToken } from '../refresh-token.ts';
import { isWithin, resolveScope } from '../scope.ts';
import {
  accessTokenResponse,
  clientParameters,
  type Grant,
  parameterValidator,
  TokenLeaked,
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

const ALREADY_USED = 'Refresh token already used';
const IN_FLIGHT = 'Refresh token is already being used';

/** What the checks of a refresh approve: the token as inspected, its grant, the account, the scope. */
interface Refresh {
  presented: PresentedRefreshToken;
  grant: RefreshTokenGrant;
  account: Account;
  scope: string;
}

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2): every refresh redeems
 * the presented token for a new one in the same family; a token presented again after it
 * was rotated means it leaked, so the whole family is revoked. The checks read the token
 * without using it up, so a refusal that means no leak leaves it usable.
 */
export const refreshTokenGrant: Grant<Refresh> = {
  type: 'refresh_token',
  parameters,
  async check(params, client, deps) {
    const { refresh_token: token, scope: requestedScope } = validate.check(params);
    // RFC 6749 §6: an omitted scope means the scope originally granted.
    const requested =
      requestedScope === undefined ? undefined : await resolveScope(requestedScope, deps.scopes);
    const found = await deps.refreshTokens.inspectRefreshToken(token);
    if (found.state === 'unknown' || found.state === 'revoked')
      throw new InvalidGrant('Invalid refresh token');
    if (found.state === 'reused') throw new TokenLeaked(found.grant.familyId, ALREADY_USED);
    // Another request is refreshing with this very token (a double submit): it wins, this one
    // fails, and nothing is revoked, since nothing leaked.
    if (found.state === 'in-flight') throw new InvalidGrant(IN_FLIGHT);
    const { grant, presented } = found;
    // RFC 6749 §10.4: the token is bound to its client. Another client holding it means it leaked.
    if (grant.clientId !== client.id)
      throw new TokenLeaked(grant.familyId, 'Refresh token was issued to another client');
    // A narrower scope narrows the access token only: the successor keeps the family's scope.
    const scope = requested ?? grant.scope;
    if (!isWithin(scope, grant.scope)) throw new InvalidScope();
    const account = await deps.sessions.resume(
      grant.accountKind,
      grant.subject,
      grant.credentialStamp,
      () => new InvalidGrant(),
    );
    return deps.approve({ presented, grant, account, scope });
  },

  async redeem({ presented, grant, account, scope }, client, deps) {
    const response = await accessTokenResponse(deps, {
      subject: { kind: grant.accountKind, id: account.id },
      credentialStamp: grant.credentialStamp,
      client,
      scope,
    });
    const redeemed = await deps.refreshTokens.redeemRefreshToken(presented, grant);
    // A concurrent refresh got there first, or the family was revoked meanwhile (reuse
    // detected, sessions ended): the store has said so atomically, revoking on reuse.
    if (redeemed.outcome === 'in-flight') throw new InvalidGrant(IN_FLIGHT);
    if (redeemed.outcome === 'reused') throw new InvalidGrant(ALREADY_USED);
    if (redeemed.outcome !== 'rotated') throw new InvalidGrant('Invalid refresh token');
    return { ...response, refresh_token: redeemed.refreshToken };
  },
};
