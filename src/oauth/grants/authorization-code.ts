import { randomUUID } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import type { Account } from '../../accounts/model.ts';
import { InvalidGrant } from '../../errors.ts';
import type { AuthorizationCodeGrant } from '../model.ts';
import { CODE_VERIFIER_PATTERN, verifiesChallenge } from '../pkce.ts';
import { isRegisteredRedirectUri, MAX_REDIRECT_URI_LENGTH } from '../redirect-uri.ts';
import {
  clientParameters,
  type GrantHandler,
  type GrantRedeemers,
  issueTokens,
  parameterValidator,
} from './grant.ts';

const parameters = Type.Object(
  {
    grant_type: Type.Literal('authorization_code'),
    ...clientParameters,
    code: Type.String({ minLength: 1, maxLength: 512 }),
    redirect_uri: Type.String({
      minLength: 1,
      maxLength: MAX_REDIRECT_URI_LENGTH,
      description: 'The redirect_uri of the authorization request, exactly',
    }),
    code_verifier: Type.String({
      pattern: CODE_VERIFIER_PATTERN,
      description: 'RFC 7636: the secret whose S256 digest was the code_challenge',
    }),
  },
  { $id: 'AuthorizationCodeGrantRequest' },
);
const validate = parameterValidator<Static<typeof parameters>>(parameters);

/** Presented after it was used: RFC 6749 §4.1.2 asks to revoke what it was exchanged for. */
const ALREADY_USED = 'Authorization code already used';

/** What the checks of a code exchange approve: the code, its grant and the account it signs in. */
interface CodeExchange {
  code: string;
  grant: AuthorizationCodeGrant;
  account: Account;
}

/**
 * RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.6): the code, bound to its client, its redirect URI
 * and its challenge, becomes tokens once. Every check comes before the code is used up, so
 * a refused request leaves it usable. A code presented again after its use means it leaked:
 * the tokens issued for it are revoked (their refresh-token family).
 */
export const authorizationCodeGrantHandler: GrantHandler<CodeExchange> = {
  type: 'authorization_code',
  parameters,
  async check(params, client, deps) {
    const { code, redirect_uri: redirectUri, code_verifier: verifier } = validate.check(params);
    const grant = await deps.authorizationCodes.findCode(code);
    // Another client's code is told apart from no code at all to nobody.
    if (!grant || grant.clientId !== client.id) throw new InvalidGrant('Invalid authorization code');
    if (grant.redirectUri !== redirectUri)
      throw new InvalidGrant('redirect_uri is not the one of the authorization request');
    // The client may have dropped the URI since the sign-in: a code for it no longer counts.
    if (!isRegisteredRedirectUri(redirectUri, client))
      throw new InvalidGrant('redirect_uri is no longer registered for this client');
    if (!verifiesChallenge(verifier, grant.codeChallenge))
      throw new InvalidGrant('code_verifier does not match the code_challenge');
    const account = await deps.sessions.resume(
      grant.accountKind,
      grant.subject,
      grant.credentialStamp,
      () => new InvalidGrant(),
    );
    return deps.approve({ code, grant, account });
  },

  async redeem({ code, grant, account }, client, deps) {
    const attempt = randomUUID();
    const consumed = await deps.authorizationCodes.consumeCode(code, attempt);
    if (consumed === 'unknown') throw new InvalidGrant('Invalid authorization code');
    if (consumed === 'reused') {
      await deps.refreshTokens.revokeFamily(grant.familyId);
      throw new InvalidGrant(ALREADY_USED);
    }
    const tokens = await issueTokens(deps, {
      subject: { kind: grant.accountKind, id: account.id },
      credentialStamp: grant.credentialStamp,
      client,
      scope: grant.scope,
      familyId: grant.familyId,
      withRefreshToken: client.grants.includes('refresh_token'),
    }).catch((error: unknown) => giveBack(error, { code, attempt, familyId: grant.familyId }, deps));
    // A second presentation while these tokens were issued found nothing to revoke yet.
    if (await deps.authorizationCodes.wasReused(code)) {
      await deps.refreshTokens.revokeFamily(grant.familyId);
      throw new InvalidGrant(ALREADY_USED);
    }
    return tokens;
  },
};

/**
 * Issuing failed after the code was used up. Refused, the family existed already: an
 * earlier presentation of the code wrote it and failed (its replicas did not confirm it in
 * time), so this one is a second presentation and the family is revoked, as for any replay.
 * Otherwise the code goes back unless a replay marked it: where nothing was written (replicas
 * known short refuse the new family unwritten; a one-off error) the client's retry, which a
 * 503 invites, exchanges it rather than being told of a replay; where the family was written
 * the retry finds it, as above. Best effort: a give-back that fails too (Redis down) leaves
 * the code used.
 */
async function giveBack(
  error: unknown,
  { code, attempt, familyId }: { code: string; attempt: string; familyId: string },
  deps: GrantRedeemers,
): Promise<never> {
  if (error instanceof InvalidGrant) {
    await deps.refreshTokens.revokeFamily(familyId);
    throw new InvalidGrant(ALREADY_USED);
  }
  await deps.authorizationCodes.releaseCode(code, attempt).catch(() => undefined);
  throw error;
}
