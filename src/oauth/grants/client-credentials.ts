import { type Static, Type } from '@sinclair/typebox';
import { resolveScope } from '../scope.ts';
import { clientParameters, type Grant, issueTokens, parameterValidator } from './grant.ts';

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
export const clientCredentialsGrant: Grant = {
  type: 'client_credentials',
  parameters,
  async handle(params, client, deps) {
    const { scope: requestedScope } = validate.check(params);
    const scope = await resolveScope(requestedScope, deps.scopes);
    return issueTokens(deps, {
      subject: { kind: 'client', id: client.id },
      client,
      scope,
      withRefreshToken: false,
    });
  },
};
