import { type Static, Type } from '@sinclair/typebox';
import type { Account } from '../../accounts/model.ts';
import { InvalidGrant } from '../../errors.ts';
import { resolveScope } from '../scope.ts';
import { clientParameters, type GrantHandler, issueTokens, parameterValidator } from './grant.ts';

const parameters = Type.Object(
  {
    grant_type: Type.Literal('password'),
    ...clientParameters,
    scope: Type.String({ description: 'Space-delimited scopes; the only registered scope is `api`.' }),
    username: Type.String({ minLength: 1, maxLength: 320 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { $id: 'PasswordGrantRequest' },
);
const validate = parameterValidator<Static<typeof parameters>>(parameters);

/** What the checks of a password grant approve: the account signed in, and the scope. */
interface SignIn {
  account: Account;
  credentialStamp: string;
  scope: string;
}

/**
 * RFC 6749 §4.3: the resource owner password credentials grant. The client decides which
 * account store is asked: the `admin` client logs in administrators, `frontend` users.
 */
export const passwordGrantHandler: GrantHandler<SignIn> = {
  type: 'password',
  parameters,
  async check(params, client, deps) {
    const { username, password, scope: requestedScope } = validate.check(params);
    const scope = await resolveScope(requestedScope, deps.scopes);
    const session = await deps.sessions.start(client.accountKind, username, password);
    if (!session) throw new InvalidGrant();
    return deps.approve({ ...session, scope });
  },

  redeem({ account, credentialStamp, scope }, client, deps) {
    return issueTokens(deps, {
      subject: { kind: client.accountKind, id: account.id },
      credentialStamp,
      client,
      scope,
      withRefreshToken: client.grants.includes('refresh_token'),
    });
  },
};
