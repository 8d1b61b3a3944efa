import type { Sessions } from '../accounts/sessions.ts';
import type { Caller } from '../caller.ts';
import { InvalidToken } from '../errors.ts';
import type { AccessTokenService, VerifiedAccessToken } from '../oauth/access-token.ts';
import type { ClientStore, OAuthClient } from '../oauth/model.ts';

const GUEST: Caller = Object.freeze({ role: 'guest' });

/**
 * Turns the `Authorization` header into the caller. No header: a guest. A bearer token must
 * verify, the client it was issued to must still be registered, and its session must still
 * be valid: a deleted client, a deleted or deactivated account is refused at once, even while
 * its token has not expired, and so is a token issued before the account's sessions ended (a
 * password change, a deactivation since undone).
 */
export function createAuthenticator(deps: {
  accessTokens: AccessTokenService;
  clients: ClientStore;
  sessions: Sessions;
}): (authorization: string | undefined) => Promise<Caller> {
  const { accessTokens, clients, sessions } = deps;
  /** The registration the token was issued by, still registered; else the token is refused. */
  async function issuingClient(token: VerifiedAccessToken): Promise<OAuthClient> {
    const client = await clients.findByName(token.clientId);
    if (!client || !isRegistrationOf(client, token)) throw new InvalidToken('Client no longer exists');
    // A client's account store never changes, so only a token not of ours could differ.
    if (token.subject.kind !== 'client' && token.subject.kind !== client.accountKind)
      throw new InvalidToken('Token claims are invalid');
    return client;
  }

  return async (authorization) => {
    if (authorization === undefined) return GUEST;
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
    if (!match?.[1]) throw new InvalidToken('Authorization header is not a Bearer token');
    const token = await accessTokens.verifyAccessToken(match[1]);
    const { subject } = token;
    if (subject.kind === 'client') {
      const client = await issuingClient(token);
      if (client.id !== subject.id) throw new InvalidToken('Client no longer exists');
      return { role: 'client', client };
    }
    // Side by side: with the caches bypassed (Redis away) each is a MongoDB round trip.
    const [, account] = await Promise.all([
      issuingClient(token),
      sessions.resume(subject.kind, subject.id, token.credentialStamp, (detail) => new InvalidToken(detail)),
    ]);
    return subject.kind === 'admin' ? { role: 'admin', account } : { role: 'user', account };
  };
}

/**
 * Whether the token was issued under this registration of its client. Tokens name the
 * registration (`client_rid`); those issued before they did are judged by their date: not
 * before the second the client was registered.
 */
function isRegistrationOf(client: OAuthClient, token: VerifiedAccessToken): boolean {
  return token.clientRegistration === undefined
    ? token.issuedAt >= Math.floor(client.createdAt.getTime() / 1000)
    : token.clientRegistration === client.id;
}
