import { type Static, Type } from '@sinclair/typebox';
import { resolveScope } from '../scope.ts';
import { accessTokenResponse, clientParameters, type GrantHandler, parameterValidator } from './grant.ts';

const parameters = Type.Object(
  {
    grant_type: Type.Literal('client_credentials'),
    ...clientParameters,
    scope: Type.String(),
  },
  { $id: 'ClientCredentialsGrantRequest' },
);
const validate = parameterValidator<Static<typeof parameters>>(parameters);

/**
 * RFC 6749 §4.4: a machine client acting for itself. The identity is the client, whose role
 * (`client`) no business route grants by default; no refresh token is issued (§4.4.3).
 */
export const clientCredentialsGrantHandler: GrantHandler<{ scope: string }> = {
  type: 'client_credentials',
  parameters,
  async check(params, _client, deps) {
    const { scope: requestedScope } = validate.check(params);
    return deps.approve({ scope: await resolveScope(requestedScope, deps.scopes) });
  },

  redeem({ scope }, client, deps) {
    return accessTokenResponse(deps, { subject: { kind: 'client', id: client.id }, client, scope });
  },
};
