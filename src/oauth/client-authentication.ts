import { InvalidClient, InvalidRequest } from '../errors.ts';
import { acceptsSecret } from './client-secrets.ts';
import type { ClientStore, OAuthClient } from './model.ts';

/**
 * RFC 6749 §2.3.1: a confidential client authenticates with its secret, in HTTP Basic or in
 * the body, never both. Basic values are form-urlencoded before Base64 (Appendix B), so they
 * are decoded after splitting. A public client (§2.1) sends its `client_id` alone (in the
 * body, or as HTTP Basic with an empty password), and only a public one may: a confidential
 * client without its secret is refused, and a public client that presents a secret has none
 * that could match. After a rotation the previous secret is accepted too until its overlap
 * ends (client-secrets.ts).
 */
export async function authenticateClient(
  params: Record<string, unknown>,
  authorization: string | undefined,
  clients: ClientStore,
): Promise<OAuthClient> {
  const basic = authorization === undefined ? null : basicCredentials(authorization);
  if (basic && params.client_secret !== undefined) {
    throw new InvalidRequest('Client credentials must be sent in one way only: HTTP Basic or the body');
  }
  if (basic?.id && params.client_id !== undefined && params.client_id !== basic.id) {
    throw new InvalidRequest('client_id in the body does not match the HTTP Basic credentials');
  }
  // RFC 6749 §5.2: a client that tried HTTP Basic and failed gets a 401 with a Basic challenge.
  const refused = () => new InvalidClient(basic !== null);
  const id = basic ? basic.id : params.client_id;
  // An empty Basic password is none: how some libraries send a public client's id alone.
  const secret = basic ? basic.secret || undefined : params.client_secret;
  if (typeof id !== 'string' || id === '') {
    throw basic ? refused() : new InvalidRequest('Missing parameter: client_id');
  }
  if (secret === undefined) {
    const client = await clients.findByName(id);
    if (!client) throw refused();
    if (client.type !== 'public') {
      throw basic ? refused() : new InvalidRequest('Missing parameter: client_secret');
    }
    return client;
  }
  if (typeof secret !== 'string' || secret === '')
    throw new InvalidRequest('Missing parameter: client_secret');

  const client = await clients.findByName(id);
  const matches = acceptsSecret(client, secret, new Date());
  if (client?.type !== 'confidential' || !matches) throw refused();
  return client;
}

/**
 * The credentials of an `Authorization` header of the Basic scheme; null for another scheme.
 * A Basic header that cannot be read is a failed authentication, as a wrong secret is.
 */
function basicCredentials(header: string): { id: string; secret: string } | null {
  if (!/^basic(?: |$)/i.test(header)) return null;
  const encoded = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)?.[1];
  const decoded = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new InvalidClient(true);
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replaceAll('+', ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replaceAll('+', ' ')),
    };
  } catch {
    throw new InvalidClient(true);
  }
}
