import { type TSchema, Type } from '@sinclair/typebox';
import type { AccountKind } from '../../accounts/model.ts';
import type { Sessions } from '../../accounts/sessions.ts';
import { InvalidGrant, InvalidRequest, InvalidScope } from '../../errors.ts';
import { compileValidator, type Validator } from '../../validation.ts';
import type { AccessTokenService } from '../access-token.ts';
import type { AuthorizationCodeService } from '../authorization-code.ts';
import type { GrantType, OAuthClient, ScopeStore } from '../model.ts';
import type { RefreshTokenHold, RefreshTokenService } from '../refresh-token.ts';

/** RFC 6749 §5.1. `refresh_token` is absent for the client credentials grant (§4.4.3). */
export interface TokenResponse {
  token_type: 'Bearer';
  expires_in: number;
  access_token: string;
  refresh_token?: string;
}

export interface GrantDependencies {
  scopes: ScopeStore;
  sessions: Sessions;
  accessTokens: AccessTokenService;
  refreshTokens: RefreshTokenService;
  authorizationCodes: AuthorizationCodeService;
}

/** Parameters every grant accepts: client credentials in the body (or HTTP Basic instead). */
export const clientParameters = {
  client_id: Type.Optional(Type.String({ description: 'Or HTTP Basic' })),
  client_secret: Type.Optional(Type.String({ description: 'Or HTTP Basic' })),
};

/** One grant: the parameters it accepts and the handler that tells its RFC's story. */
export interface Grant {
  type: GrantType;
  parameters: TSchema;
  handle(
    params: Record<string, unknown>,
    client: OAuthClient,
    deps: GrantDependencies,
  ): Promise<TokenResponse>;
}

/**
 * A grant's parameter check, failing as RFC 6749 `invalid_request` naming the first bad
 * parameter. A missing or malformed `scope` is `invalid_scope` instead: §3.3 leaves an
 * omitted scope to the server's policy, and with no default scope configured that policy
 * is to refuse it as an invalid scope.
 */
export function parameterValidator<T>(schema: TSchema): Validator<T> {
  return compileValidator<T>(schema, (errors) => {
    const field = Object.keys(errors)[0] ?? 'body';
    if (field === 'scope') return new InvalidScope();
    return new InvalidRequest(`Missing or invalid parameter: ${field}`);
  });
}

/** Who the tokens are for: a machine client, or an account with its current credential stamp. */
export type TokenHolder =
  | { subject: { kind: 'client'; id: string } }
  | { subject: { kind: AccountKind; id: string }; credentialStamp: string };

export async function issueTokens(
  deps: GrantDependencies,
  grant: TokenHolder & {
    client: OAuthClient;
    scope: string;
    familyId?: string;
    /** The consumed refresh token this issue rotates. */
    rotates?: RefreshTokenHold;
    withRefreshToken: boolean;
  },
): Promise<TokenResponse> {
  const { subject, client, scope } = grant;
  const credentialStamp = 'credentialStamp' in grant ? grant.credentialStamp : undefined;
  const access = await deps.accessTokens.issueAccessToken({
    subject,
    clientId: client.name,
    clientRegistration: client.id,
    scope,
    credentialStamp,
  });
  const response: TokenResponse = {
    token_type: 'Bearer',
    expires_in: access.expiresIn,
    access_token: access.token,
  };
  if (grant.withRefreshToken && 'credentialStamp' in grant) {
    const refreshToken = await deps.refreshTokens.issueRefreshToken({
      familyId: grant.familyId,
      rotates: grant.rotates,
      clientId: client.id,
      accountKind: grant.subject.kind,
      subject: grant.subject.id,
      scope,
      credentialStamp: grant.credentialStamp,
    });
    // Revoked while this refresh ran (reuse detected, password changed): no tokens at all.
    if (refreshToken === null) throw new InvalidGrant('Invalid refresh token');
    response.refresh_token = refreshToken;
  }
  return response;
}
