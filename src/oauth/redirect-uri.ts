/**
 * Redirect URIs of the authorization code grant. A registered URI is compared with the
 * requested one as a string, exactly (RFC 9700 §2.1): no prefix, no added path or query,
 * no other port. The one exception is RFC 8252 §7.3: a native app listens on a loopback
 * port the system chose when it started, so for `http://127.0.0.1` and `http://[::1]` the
 * port may differ.
 */

/** Loopback IP literals. `localhost` is not among them: RFC 8252 §8.3 advises against it. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]']);

/** Longer than any URL a browser keeps; bounds the work a requested URI can cause. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

/** Why `uri` cannot be registered as a redirect URI, or null when it can. */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'Must be an absolute URL';
  }
  // Compared as strings, so registered in the one form a URL parser writes it.
  if (url.href !== uri) return `Must be written in its normal form, ${url.href}`;
  if (uri.includes('#')) return 'Must not have a fragment (RFC 6749 §3.1.2)';
  if (url.username !== '' || url.password !== '') return 'Must not carry credentials';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))
    return 'Must be https, or http on a loopback address (127.0.0.1 or [::1]) for a native app';
  if (!isHostName(url.hostname))
    return 'Must name its host by letters, digits, hyphens and dots, or by an IP address';
  if (url.port === '0') return 'Must not have port 0, which nothing listens on';
  return null;
}

/**
 * A DNS host name (labels of letters, digits and inner hyphens; an internationalised name in
 * the punycode form the URL parser writes), an IPv4 address or an IPv6 literal. URL parsers
 * let a host hold `; , ' " ! $ & ( ) * + = { } ~`, which would end or add a directive of the
 * sign-in page's Content-Security-Policy, whose `form-action` names the redirect's origin.
 */
function isHostName(hostname: string): boolean {
  if (hostname.startsWith('[')) return /^\[[0-9a-f:.]+\]$/.test(hostname);
  return hostname.length <= 253 && hostname.split('.').every((label) => HOST_LABEL.test(label));
}

/** RFC 1123 §2.1, lower-cased as the URL parser writes a host. */
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Whether the client registered the requested redirect URI. Only a URI that could be
 * registered today matches: one stored under older rules is refused rather than followed.
 */
export function isRegisteredRedirectUri(requested: string, registered: readonly string[]): boolean {
  if (requested.length > MAX_REDIRECT_URI_LENGTH || redirectUriProblem(requested) !== null) return false;
  if (registered.includes(requested)) return true;
  const loopback = withoutLoopbackPort(requested);
  return loopback !== null && registered.some((uri) => withoutLoopbackPort(uri) === loopback);
}

/** A loopback URI in its normal form with the port left out; null for any other URI. */
function withoutLoopbackPort(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname) || url.href !== uri) return null;
  url.port = '';
  return url.href;
}

/**
 * The redirect URI with the response parameters added to its query (RFC 6749 §4.1.2): a
 * query of its own is kept as it is, parameters without a value are left out.
 */
export function withResponseParameters(uri: string, parameters: Record<string, string | null>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== null) query.append(name, value);
  return `${uri}${uri.includes('?') ? '&' : '?'}${query}`;
}
