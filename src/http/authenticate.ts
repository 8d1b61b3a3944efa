import type { Sessions } from '../accounts/sessions.ts';
import { InvalidToken } from '../errors.ts';
import type { Identity } from '../identity.ts';
import type { AccessTokenService, TokenSubject } from '../oauth/access-token.ts';
import type { ClientStore, OAuthClient } from '../stores/types.ts';

const GUEST: Identity = Object.freeze({ role: 'guest' });

/**
 * Turns the `Authorization` header into an identity. No header: guest. A bearer token must
 * verify, the client it was issued to must still be registered, and its session must still
 * be valid: a deleted client, a deleted or deactivated account is refused at once, even while
 * its token has not expired, and so is a token issued before the account's sessions ended (a
 * password change, a deactivation since undone).
 */
export function createAuthenticator(deps: {
  accessTokens: AccessTokenService;
  clients: ClientStore;
  sessions: Sessions;
}): (authorization: string | undefined) => Promise<Identity> {
  const { accessTokens, clients, sessions } = deps;
  return async (authorization) => {
    if (authorization === undefined) return GUEST;
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
    if (!match?.[1]) throw new InvalidToken('Authorization header is not a Bearer token');
    const { subject, clientId, credentialStamp, issuedAt } = await accessTokens.verifyAccessToken(match[1]);
    const client = await clients.findByName(clientId);
    if (!client || !issuedBy(client, subject.kind, issuedAt))
      throw new InvalidToken('Client no longer exists');
    if (subject.kind === 'client') {
      if (client.id !== subject.id) throw new InvalidToken('Client no longer exists');
      return { role: 'client', client };
    }
    const account = await sessions.resume(
      subject.kind,
      subject.id,
      credentialStamp,
      (detail) => new InvalidToken(detail),
    );
    return subject.kind === 'admin' ? { role: 'admin', account } : { role: 'user', account };
  };
}

/**
 * Whether this registration of the client can have issued the token: one of the kind of
 * account it signs in (or a client credentials token), issued no earlier than the second it
 * was registered. A client deleted and registered again under the same name is a new
 * registration, which the tokens of the old one do not speak for.
 */
function issuedBy(client: OAuthClient, kind: TokenSubject['kind'], issuedAt: number): boolean {
  return (
    (kind === 'client' || kind === client.accountKind) &&
    issuedAt >= Math.floor(client.createdAt.getTime() / 1000)
  );
}
