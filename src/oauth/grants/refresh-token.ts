import { type Static, Type } from '@sinclair/typebox';
import type { Account } from '../../accounts/model.ts';
import { InvalidGrant, InvalidScope } from '../../errors.ts';
import type { RefreshTokenFamily } from '../model.ts';
import type { PresentedRefreshToken } from '../refresh-token.ts';
import { isWithin, resolveScope } from '../scope.ts';
import {
  accessTokenResponse,
  clientParameters,
  type GrantHandler,
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

/** What the checks of a refresh approve: the token as inspected, its family, the account, the scope. */
interface Refresh {
  presented: PresentedRefreshToken;
  family: RefreshTokenFamily;
  account: Account;
  scope: string;
}

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2): every refresh redeems
 * the presented token for a new one in the same family. The token a rotation replaced,
 * presented again by its client within the retry window while its successor is unused, is
 * answered with that same successor, so a lost answer or two tabs sign nobody out and the
 * family still has one live token. Any other earlier token means it leaked, so the whole
 * family is revoked. The checks read the token without using it up, so a refusal that
 * means no leak leaves it usable.
 */
export const refreshGrantHandler: GrantHandler<Refresh> = {
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
    if (found.state === 'reused') throw new TokenLeaked(found.family.familyId, ALREADY_USED);
    // Current, or the token just rotated coming back (a lost answer, a second tab): a retry
    // is checked like a first try, and redeemed for the same successor.
    const { family, presented } = found;
    // RFC 6749 §10.4: the token is bound to its client. Another client holding it means it leaked.
    if (family.clientId !== client.id)
      throw new TokenLeaked(family.familyId, 'Refresh token was issued to another client');
    // A narrower scope narrows the access token only: the successor keeps the family's scope.
    const scope = requested ?? family.scope;
    if (!isWithin(scope, family.scope)) throw new InvalidScope();
    const account = await deps.sessions.resume(
      family.accountKind,
      family.subject,
      family.credentialStamp,
      () => new InvalidGrant(),
    );
    return deps.approve({ presented, family, account, scope });
  },

  async redeem({ presented, family, account, scope }, client, deps) {
    // Signed while the store rotates; thrown away if the rotation refuses.
    const [response, redeemed] = await Promise.all([
      accessTokenResponse(deps, {
        subject: { kind: family.accountKind, id: account.id },
        credentialStamp: family.credentialStamp,
        client,
        scope,
      }),
      deps.refreshTokens.redeemRefreshToken(presented, family),
    ]);
    // Since the checks, the successor was used or the window ended (reuse: the store revoked
    // the family with that verdict), or the family was revoked (sessions ended).
    if (redeemed.outcome === 'reused') throw new InvalidGrant(ALREADY_USED);
    if (redeemed.outcome !== 'rotated' && redeemed.outcome !== 'retried')
      throw new InvalidGrant('Invalid refresh token');
    return { ...response, refresh_token: redeemed.refreshToken };
  },
};
