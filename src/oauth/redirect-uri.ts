import type { ClientType } from './model.ts';

/**
 * Redirect URIs of the authorization code grant (RFC 8252 for native apps): `https` (web
 * apps, and the claimed https links of native apps), `http` on a loopback IP literal (desktop
 * apps), and for public clients a private-use scheme (mobile apps). A registered URI is
 * compared with the requested one as a string, exactly (RFC 9700 §2.1): no prefix, no added
 * path or query, no other port. The one exception is RFC 8252 §7.3: a native app listens on a
 * loopback port the system chose when it started, so for `http://127.0.0.1` and `http://[::1]`
 * the port may differ.
 */

/** Loopback IP literals. `localhost` is not among them: RFC 8252 §8.3 advises against it. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]']);

/** Longer than any URL a browser keeps; bounds the work a requested URI can cause. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

/** Why `uri` cannot be registered as a redirect URI of a client of this type, or null when it can. */
export function redirectUriProblem(uri: string, clientType: ClientType): string | null {
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
  if (url.protocol === 'http:' && url.hostname === 'localhost')
    return 'Must not be http://localhost, which may resolve elsewhere: use http://127.0.0.1 (or http://[::1]) with the port (RFC 8252 §8.3)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return privateUseProblem(url, clientType);
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname))
    return 'Must be https, or http on a loopback address (127.0.0.1 or [::1]) for a native app';
  if (!isHostName(url.hostname))
    return 'Must name its host by letters, digits, hyphens and dots, or by an IP address';
  if (url.port === '0') return 'Must not have port 0, which nothing listens on';
  return null;
}

/**
 * RFC 8252 §7.1: a mobile app receives the redirect at a scheme of its own, named after a
 * domain its publisher owns, reversed (`com.example.app:/oauth2redirect`). The dot is what
 * tells it from the schemes browsers give a meaning (`javascript:`, `data:`, `file:`, …), none
 * of which has one. Any app can claim a scheme, so it says nothing about who the client is:
 * only a public client, which makes no such claim, may use one (a confidential client
 * redirects over https). Written as §7.1 does, with a path and no authority, so that no host
 * can appear that the exact comparison and the page's `form-action` would have to read. The
 * scheme is all the sign-in page's CSP names, and its characters (letters, digits, `.`, `-`)
 * cannot end or add a directive.
 */
function privateUseProblem(url: URL, clientType: ClientType): string | null {
  const scheme = url.protocol.slice(0, -1);
  const labels = scheme.split('.');
  if (labels.length < 2 || scheme.length > 253 || !labels.every((label) => HOST_LABEL.test(label)))
    return (
      'Must be https, http on a loopback address (127.0.0.1 or [::1]), or for a native app a scheme ' +
      'named after a reversed domain name its publisher owns, such as com.example.app:/oauth2redirect (RFC 8252 §7.1)'
    );
  if (!url.href.startsWith(`${url.protocol}/`) || url.href.startsWith(`${url.protocol}//`))
    return `Must be written ${scheme}:/path, with no host (RFC 8252 §7.1)`;
  if (clientType !== 'public')
    return 'Only a public client may use a private-use scheme (any app can claim one); a confidential client redirects over https';
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

/** RFC 1123 §2.1, lower-cased as the URL parser writes a host (and a scheme). */
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Whether the client registered the requested redirect URI. Only a URI that could be
 * registered today matches: one stored under older rules is refused rather than followed.
 */
export function isRegisteredRedirectUri(
  requested: string,
  client: { type: ClientType; redirectUris: readonly string[] },
): boolean {
  if (requested.length > MAX_REDIRECT_URI_LENGTH || redirectUriProblem(requested, client.type) !== null)
    return false;
  const registered = client.redirectUris;
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
 * Where a redirect URI sends the browser, as the sign-in page names it and its CSP's
 * `form-action` must allow it: its origin, or for a private-use scheme, which has no origin
 * (the URL parser's `null`, which Chromium's CSP matches with nothing), the scheme itself
 * (`com.example.app:`).
 */
export function redirectDestination(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : url.protocol;
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
