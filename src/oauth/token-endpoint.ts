import { InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from '../errors.ts';
import { authenticateClient } from './client-authentication.ts';
import { authorizationCodeGrantHandler } from './grants/authorization-code.ts';
import { clientCredentialsGrantHandler } from './grants/client-credentials.ts';
import {
  checkPhase,
  type GrantDependencies,
  type GrantHandler,
  type GrantRedeemers,
  redeemPhase,
  TokenLeaked,
  type TokenResponse,
} from './grants/grant.ts';
import { passwordGrantHandler } from './grants/password.ts';
import { refreshGrantHandler } from './grants/refresh-token.ts';
import type { ClientStore, GrantType } from './model.ts';

const ALL_GRANTS: readonly GrantHandler[] = [
  authorizationCodeGrantHandler,
  passwordGrantHandler,
  refreshGrantHandler,
  clientCredentialsGrantHandler,
];

/** The grants the configuration enables, in a fixed order; the others do not exist for the service. */
export function enabledGrants(enabled: ReadonlySet<GrantType>): GrantHandler[] {
  return ALL_GRANTS.filter((grant) => enabled.has(grant.type));
}

export type TokenEndpoint = (params: unknown, authorization: string | undefined) => Promise<TokenResponse>;

/**
 * The token endpoint (RFC 6749 §3.2): it only checks the request's shape, authenticates the
 * client, looks the grant up and runs its two phases: the checks, with dependencies that
 * only read, then the redemption of what they approved. Disabled grants are simply not in
 * the table.
 */
export function createTokenEndpoint(
  enabled: ReadonlySet<GrantType>,
  deps: GrantDependencies & { clients: ClientStore },
): TokenEndpoint {
  const grants = new Map(enabledGrants(enabled).map((grant) => [grant.type, grant]));
  const readers = checkPhase(deps);
  const redeemers = redeemPhase(deps);

  return async (body, authorization) => {
    const params = requestParameters(body);
    const grantType = params.grant_type;
    if (grantType === undefined) throw new InvalidRequest('Missing parameter: grant_type');
    const grant = typeof grantType === 'string' ? grants.get(grantType as GrantType) : undefined;
    if (!grant) throw new UnsupportedGrantType();
    const client = await authenticateClient(params, authorization, deps.clients);
    if (!client.grants.includes(grant.type))
      throw new UnauthorizedClient(`The client may not use the ${grant.type} grant`);
    const approval = await grant
      .check(params, client, readers)
      .catch((error: unknown) => revokeLeaked(error, redeemers));
    return grant.redeem(approval, client, redeemers);
  };
}

/** A refusal that found a leaked token revokes its family, then is told as it is. */
async function revokeLeaked(error: unknown, redeemers: GrantRedeemers): Promise<never> {
  if (error instanceof TokenLeaked) await redeemers.refreshTokens.revokeFamily(error.familyId);
  throw error;
}

/**
 * RFC 6749 §3.2: parameters sent without a value are treated as omitted, and no parameter may
 * be repeated (a repeated form field arrives as an array). The names are the client's, so
 * they go onto an object without a prototype: a member named `__proto__`, `constructor` or
 * `prototype` is an unknown parameter like any other (ignored, §3.2), never a way to make
 * other parameters appear.
 */
function requestParameters(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequest('The token request must be a JSON object or a form-encoded body');
  }
  const params: Record<string, unknown> = Object.create(null);
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value)) throw new InvalidRequest(`Parameter ${name} must not be repeated`);
    if (value !== '' && value !== null) params[name] = value;
  }
  return params;
}
