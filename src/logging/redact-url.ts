/**
 * What a log line may say about a connection URL (MongoDB, Redis, SMTP): where it points,
 * never its password, which a driver's error message might echo.
 */

/** `host[:port][,host2...]` of the URL, without credentials. */
export function hostOf(url: string): string {
  const authority = authorityOf(url);
  return authority.slice(authority.lastIndexOf('@') + 1) || 'localhost';
}

/** The error's message with the URL's password, raw or percent-decoded, replaced by `***`. */
export function messageWithoutPassword(error: unknown, url: string | undefined): string {
  const message = error instanceof Error ? error.message : String(error);
  const password = url === undefined ? '' : passwordOf(url);
  if (password === '') return message;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // A malformed escape: only the raw form can appear.
  }
  return message.split(password).join('***').split(decoded).join('***');
}

/**
 * Parsed by hand rather than with `URL`: a MongoDB URL may list several `host:port` pairs,
 * which `URL` refuses.
 */
function authorityOf(url: string): string {
  return url.replace(/^[a-z+]+:\/\//i, '').split(/[/?]/, 1)[0] ?? '';
}

function passwordOf(url: string): string {
  const authority = authorityOf(url);
  const at = authority.lastIndexOf('@');
  if (at < 0) return '';
  const userInfo = authority.slice(0, at);
  return userInfo.includes(':') ? userInfo.slice(userInfo.indexOf(':') + 1) : '';
}
