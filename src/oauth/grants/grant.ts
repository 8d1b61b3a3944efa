import { type TSchema, Type } from '@sinclair/typebox';
import type { AccountKind } from '../../accounts/model.ts';
import type { Sessions } from '../../accounts/sessions.ts';
import { InvalidGrant, InvalidRequest, InvalidScope } from '../../errors.ts';
import { compileValidator, type Validator } from '../../validation.ts';
import type { AccessTokenService } from '../access-token.ts';
import type { AuthorizationCodeReader, AuthorizationCodeService } from '../authorization-code.ts';
import type { GrantType, OAuthClient, ScopeStore } from '../model.ts';
import type { RefreshTokenReader, RefreshTokenService } from '../refresh-token.ts';

/** RFC 6749 §5.1. `refresh_token` is absent for the client credentials grant (§4.4.3). */
export interface TokenResponse {
  token_type: 'Bearer';
  expires_in: number;
  access_token: string;
  refresh_token?: string;
}

/** Everything the grants use; the token endpoint hands each phase its part of it. */
export interface GrantDependencies {
  scopes: ScopeStore;
  sessions: Sessions;
  accessTokens: AccessTokenService;
  refreshTokens: RefreshTokenService;
  authorizationCodes: AuthorizationCodeService;
}

declare const approved: unique symbol;
/**
 * What a grant's checks found and approved. Only `GrantReaders.approve` makes one, so a
 * redeem phase cannot run on a request nothing checked.
 */
export type Approval<T> = T & { readonly [approved]: true };

/**
 * What the check phase may use: lookups that read, and nothing that consumes or issues. A
 * one-time token is peeked at here, never used up.
 */
export interface GrantReaders {
  scopes: Pick<ScopeStore, 'findByName'>;
  sessions: Pick<Sessions, 'start' | 'resume'>;
  refreshTokens: RefreshTokenReader;
  authorizationCodes: AuthorizationCodeReader;
  /** Turns what the checks found into the approval the redeem phase needs. */
  approve<T>(terms: T): Approval<T>;
}

/** What the redeem phase uses: the atomic steps that consume a token or code, and the issuers. */
export interface GrantRedeemers {
  accessTokens: AccessTokenService;
  refreshTokens: RefreshTokenService;
  authorizationCodes: AuthorizationCodeService;
}

/**
 * One grant, in two phases (as fosite splits a grant into handling the request and populating
 * the response). `check` runs every condition with read-only dependencies, refusing with a
 * named error, and approves the request; only an approved request reaches `redeem`, the one
 * atomic step that consumes what the grant was presented with and issues. So a refused
 * request never used anything up.
 */
export interface GrantHandler<T = unknown> {
  type: GrantType;
  parameters: TSchema;
  check(params: Record<string, unknown>, client: OAuthClient, deps: GrantReaders): Promise<Approval<T>>;
  redeem(approval: Approval<T>, client: OAuthClient, deps: GrantRedeemers): Promise<TokenResponse>;
}

/**
 * The one refusal of a check that changes state: a one-time token came back after it was
 * used, or from a client it was not issued to, so it leaked. The token endpoint revokes the
 * family it names (RFC 9700 §4.14.2) before it refuses.
 */
export class TokenLeaked extends InvalidGrant {
  readonly familyId: string;
  constructor(familyId: string, detail: string) {
    super(detail);
    this.familyId = familyId;
  }
}

/** The dependencies of the check phase: the reading half of `deps`, and the maker of approvals. */
export function checkPhase(deps: GrantDependencies): GrantReaders {
  const { scopes, sessions, refreshTokens, authorizationCodes } = deps;
  return {
    scopes: { findByName: (name) => scopes.findByName(name) },
    sessions: { start: sessions.start, resume: sessions.resume },
    refreshTokens: { inspectRefreshToken: (token) => refreshTokens.inspectRefreshToken(token) },
    authorizationCodes: { findCode: (code) => authorizationCodes.findCode(code) },
    approve: <T>(terms: T) => terms as Approval<T>,
  };
}

/** The dependencies of the redeem phase. */
export function redeemPhase(deps: GrantDependencies): GrantRedeemers {
  const { accessTokens, refreshTokens, authorizationCodes } = deps;
  return { accessTokens, refreshTokens, authorizationCodes };
}

/** Parameters every grant accepts: client credentials in the body (or HTTP Basic instead). */
export const clientParameters = {
  client_id: Type.Optional(Type.String({ description: 'Or HTTP Basic' })),
  client_secret: Type.Optional(Type.String({ description: 'Or HTTP Basic' })),
};

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

/** The access token of a response, for the grant's client. */
export async function accessTokenResponse(
  deps: Pick<GrantRedeemers, 'accessTokens'>,
  grant: TokenHolder & { client: OAuthClient; scope: string },
): Promise<TokenResponse> {
  const { subject, client, scope } = grant;
  const access = await deps.accessTokens.issueAccessToken({
    subject,
    clientId: client.name,
    clientRegistration: client.id,
    scope,
    credentialStamp: 'credentialStamp' in grant ? grant.credentialStamp : undefined,
  });
  return { token_type: 'Bearer', expires_in: access.expiresIn, access_token: access.token };
}

/** A new session's tokens: an access token and, unless `withRefreshToken` is false, a new family. */
export async function issueTokens(
  deps: GrantRedeemers,
  grant: TokenHolder & {
    client: OAuthClient;
    scope: string;
    familyId?: string;
    withRefreshToken: boolean;
  },
): Promise<TokenResponse> {
  const response = await accessTokenResponse(deps, grant);
  if (grant.withRefreshToken && 'credentialStamp' in grant) {
    const refreshToken = await deps.refreshTokens.issueRefreshToken({
      familyId: grant.familyId,
      clientId: grant.client.id,
      accountKind: grant.subject.kind,
      subject: grant.subject.id,
      scope: grant.scope,
      credentialStamp: grant.credentialStamp,
    });
    // The family of an authorization code that an earlier presentation of it wrote: no tokens.
    if (refreshToken === null) throw new InvalidGrant('Invalid refresh token');
    response.refresh_token = refreshToken;
  }
  return response;
}
