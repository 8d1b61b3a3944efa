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
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'Must be https, or http on a loopback address (127.0.0.1 or [::1]) for a native app';
}

/** Whether the client registered the requested redirect URI. */
export function isRegisteredRedirectUri(requested: string, registered: readonly string[]): boolean {
  if (requested.length > MAX_REDIRECT_URI_LENGTH) return false;
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
