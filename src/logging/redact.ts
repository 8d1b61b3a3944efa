/**
 * Removes secrets from anything about to be written to a log, at any depth. pino's `redact`
 * paths name fixed positions (a wildcard spans one level); an error thrown by a library can
 * carry a request config, headers or a body several levels down, so every line also passes
 * through this walk, which blanks every member whose name says it holds a secret.
 */

export const REDACTED = '[redacted]';

/**
 * Member names (lower-cased, punctuation removed) that hold secrets: `password`,
 * `passwordConfirm`, `client_secret`, `refresh_token`, `access_token`, `id_token`, `Authorization`,
 * `Error-Reporting-Token`, `Cookie`, `apiKey`, `code_verifier` (PKCE), `client_assertion` (a
 * signed credential, RFC 7521), `jwt` (an access token, `idJwt`), ... `passwordHash` too: a hash
 * is not for the log either.
 */
const SECRET_NAME =
  /password|passwd|secret|token|authorization|cookie|apikey|privatekey|credential|verifier|assertion|jwt|resetcode|activationcode|confirmationcode/;

/**
 * Secret only as the whole name: `hash`, the hash of a mailed link as a client names it, and
 * `auth` (`user:password` in Node's request options, a client's credentials in an HTTP
 * client's config). As part of a name (`hashAlgorithm`, `commitHash`, `author`, `authSource`)
 * they are far more often something the log needs. (The names that end in `code` are in
 * SECRET_NAME; `code` alone is blanked only as a URL parameter, below.)
 */
const WHOLE_SECRET_NAMES = new Set(['hash', 'auth', 'proxyauth', 'basicauth']);

/**
 * The parameters of an OAuth redirect back to an app (RFC 6749 §4.1.2): the authorization code
 * and the `state` that guards it. Blanked only as URL parameters (after `?`, `&`, `#` or `;`, or
 * at the start of a bare query string): as JSON members these names are far more often an
 * error's `code` or a connection's `state`, which the log needs.
 */
const CALLBACK_PARAMETERS = new Set(['code', 'state']);

export function isSecretName(name: string): boolean {
  const normalised = percentDecoded(name)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
  return WHOLE_SECRET_NAMES.has(normalised) || SECRET_NAME.test(normalised);
}

/**
 * A form or query key as its sender meant it: `pass%77ord` is `password`, and so is
 * `pass%2577ord`, the key of a URL encoded into another URL's query. Each `%XX` (after any
 * number of `25`s) becomes one character; unlike decodeURIComponent this never throws, which
 * made text full of malformed escapes forty times slower to scrub than any other.
 */
function percentDecoded(name: string): string {
  return name.includes('%')
    ? name.replace(PERCENT_ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    : name;
}

/** `(25)*` and the pair after it cannot overlap in more than one way: linear, as the text. */
const PERCENT_ESCAPE = /%(?:25)*([0-9A-Fa-f]{2})/g;

const MAX_DEPTH = 12;

/**
 * A copy of `value` with every secret member replaced by `[redacted]`. Errors become plain
 * objects (`type`, `message`, `stack`, their own members, `cause` and aggregated `errors`),
 * objects with `toJSON` (dates, buffers) are taken in that form, cycles become `[circular]`.
 */
export function scrubSecrets(value: unknown): unknown {
  return scrub(value, new WeakSet(), 0);
}

/**
 * Secrets inside text, as found in the message or serialized request of an error thrown by an
 * HTTP or database client, or in an error report: a credential after `Bearer`/`Basic`, and
 * the value of every secret-named key in JSON (`"password":"..."`, `'password': '...'`),
 * form or query (`password=...`, also percent-encoded) and header (`Authorization: ...`,
 * `Cookie: ...`) syntax, the credentials of a URL (`redis://user:password@host`), the hash of a
 * mailed link (`/account/reset-password/<hash>`), the `code` and `state` of a redirect
 * wherever they are URL parameters (`/callback?code=...&state=...`), every standalone
 * run of 43 base64url characters, the shape of every one-time secret the service mails or
 * hands out (one-time-secrets.ts): a link's hash copied out of its link is still the link, and
 * every JWS in compact form (`eyJ...` `.` `...` `.` `...`), the shape of an access token.
 * A URL may sit percent-encoded in another URL's query, once or more (`%252F` is an encoded
 * `%2F`): each of these is recognised there too.
 *
 * Linear in the text, which anyone can send in an error report: a hand-written scan instead
 * of a regex with overlapping quantifiers, looking back at most a bounded key length from
 * each `:`, `=` or `%3D`, never past the previous one, and never rescanning a value it has blanked.
 */
export function scrubText(text: string): string {
  return blankSecretRuns(
    scrubKeyedValues(
      text
        .replace(CREDENTIAL_AFTER_SCHEME, `$1 ${REDACTED}`)
        .replace(CREDENTIALS_IN_URL, `://${REDACTED}@`)
        .replace(MAILED_LINK_HASH, `$1${REDACTED}`),
    ),
  );
}

/** 256 random bits in base64url: a one-time secret's length (one-time-secrets.ts). */
const SECRET_RUN_LENGTH = 43;

/**
 * Every maximal run of base64url characters exactly SECRET_RUN_LENGTH long, and every JWS in
 * compact form, blanked. A percent escape ends a run and starts the next (`%2F<hash>` inside an
 * encoded URL), an escape encoded again too (`%252F<hash>`). One pass: each character is looked
 * at once, the second part of a dotted run that turns out no JWS at most twice.
 */
function blankSecretRuns(text: string): string {
  const kept: string[] = [];
  let copiedUpTo = 0;
  const blank = (start: number, end: number) => {
    kept.push(text.slice(copiedUpTo, start), REDACTED);
    copiedUpTo = end;
  };
  // The last pair of an escape that began `%25`: a literal `%` before a hash (`%25` + `ab...`)
  // reads the same as `%25ab` + `...`, so a run there is also measured from that pair.
  let pairBefore = -1;
  let at = 0;
  while (at < text.length) {
    if (!isBase64urlCharacter(text.charCodeAt(at))) {
      const escapeEnd = percentEscapeEnd(text, at);
      pairBefore = escapeEnd > at + 3 ? escapeEnd - 2 : -1;
      at = escapeEnd > at ? escapeEnd : at + 1;
      continue;
    }
    const start = at;
    at = runEnd(text, at);
    const jwsEnd = endOfJws(text, start, at);
    if (jwsEnd !== undefined) {
      blank(start, jwsEnd);
      at = jwsEnd;
    } else if (at - start === SECRET_RUN_LENGTH) {
      blank(start, at);
    } else if (pairBefore === start - 2 && at - pairBefore === SECRET_RUN_LENGTH) {
      blank(pairBefore, at);
    }
    pairBefore = -1;
  }
  if (copiedUpTo === 0) return text;
  kept.push(text.slice(copiedUpTo));
  return kept.join('');
}

function runEnd(text: string, at: number): number {
  let end = at;
  while (end < text.length && isBase64urlCharacter(text.charCodeAt(end))) end++;
  return end;
}

/**
 * Where the JWS whose first part is the run `[start, firstEnd)` ends, or undefined when it is
 * none: a header (base64url JSON, so `eyJ`, `{"`), `.`, a payload, `.`, a signature (empty for
 * `alg: none`), and the further parts of a JWE. A `.` ending a sentence after it is kept.
 */
function endOfJws(text: string, start: number, firstEnd: number): number | undefined {
  if (!text.startsWith(JWS_HEADER_START, start) || text[firstEnd] !== '.') return undefined;
  const payloadEnd = runEnd(text, firstEnd + 1);
  if (payloadEnd === firstEnd + 1 || text[payloadEnd] !== '.') return undefined;
  let end = runEnd(text, payloadEnd + 1);
  while (text[end] === '.' && isBase64urlCharacter(text.charCodeAt(end + 1))) end = runEnd(text, end + 1);
  return end;
}

const JWS_HEADER_START = 'eyJ';

function isBase64urlCharacter(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x2d
  );
}

/**
 * Where the percent escape at `at` ends (`at` when there is none): `%XX`, or `%25XX`,
 * `%2525XX`, ... an escape encoded once more for each `25`.
 */
function percentEscapeEnd(text: string, at: number): number {
  if (text[at] !== '%' || !isHexDigit(text.charCodeAt(at + 1)) || !isHexDigit(text.charCodeAt(at + 2)))
    return at;
  let end = at + 3;
  while (
    text.charCodeAt(end - 2) === 0x32 &&
    text.charCodeAt(end - 1) === 0x35 &&
    isHexDigit(text.charCodeAt(end)) &&
    isHexDigit(text.charCodeAt(end + 1))
  )
    end += 2;
  return end;
}

function isHexDigit(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** The blanks and the credential's characters are disjoint classes: no backtracking between them. */
const CREDENTIAL_AFTER_SCHEME = /\b(Bearer|Basic)\s+[\w.~+/=-]{6,}/gi;

/**
 * The credentials of `scheme://user:password@host` (or `scheme://token@host`), as a
 * driver's message may quote its connection string. The password runs to the last `@` before
 * the host, as URL parsers read it, so an unencoded `@`, `#` or `?` in it is blanked too. A
 * match starts only at `://` and neither part crosses a `/` or a blank, so the stretches tried
 * from one `://` and from the next never overlap: linear in the text.
 */
const CREDENTIALS_IN_URL = /:\/\/[^\s/@:'"?#]*(?::[^\s/'"]*)?@/g;

/**
 * The hash of a mailed link in the service's own link shapes (docs/api.md): whoever reads a
 * live reset link can take the account. The path may be percent-encoded, as inside another
 * URL's query (`?next=%2Faccount%2Freset-password%2F...`), and encoded again (`%252F`). The
 * prefix is a fixed alternation (a run of `25`s cannot be read as the `2f` after it) and the
 * hash one run of a single class with nothing after it: linear.
 */
const MAILED_LINK_HASH =
  /((?:\/|%(?:25)*2f)account(?:\/|%(?:25)*2f)(?:activate|reset-password|change-identity)(?:\/|%(?:25)*2f))[\w.~-]+/gi;

/** Longer names are not the keys this looks for; the bound keeps the look-back constant. */
const MAX_KEY_LENGTH = 64;
/**
 * `:` (JSON, headers), `=` (forms, queries) and `%3D`, an `=` inside a percent-encoded URL
 * (`%253D` encoded twice).
 */
const SEPARATOR = /[:=]|%(?:25)*3[Dd]/g;
/**
 * Where an unquoted value ends: a form value at `&`, blanks or a quote; a value after `:` at the
 * line's end (a header such as `Authorization: Digest a="x", response="y"` has commas inside).
 */
const FORM_VALUE_END = new Set(['&', ' ', '\t', '\r', '\n', '"', "'"]);
const HEADER_VALUE_END = new Set(['\r', '\n']);

function scrubKeyedValues(text: string): string {
  const kept: string[] = [];
  let copiedUpTo = 0;
  // A key never reaches back past the previous separator, so every character is looked back at once.
  let previousEnd = 0;
  SEPARATOR.lastIndex = 0;
  for (let match = SEPARATOR.exec(text); match !== null; match = SEPARATOR.exec(text)) {
    const separator = match.index;
    const key = keyBefore(text, separator, previousEnd);
    previousEnd = separator + match[0].length;
    if (key === undefined) continue;
    const inUrl = match[0] !== ':';
    if (!isSecretName(key.name) && !(inUrl && isCallbackParameter(text, key))) continue;
    const value = valueAfter(text, separator, match[0].length);
    if (value.end === value.start) continue;
    kept.push(text.slice(copiedUpTo, value.start), value.blanked);
    copiedUpTo = value.end;
    previousEnd = value.end;
    SEPARATOR.lastIndex = value.end;
  }
  kept.push(text.slice(copiedUpTo));
  return kept.join('');
}

/**
 * The key ending just before the separator, not reaching back before `floor`: a quoted name, or
 * a run of word characters and `-`.
 */
function keyBefore(
  text: string,
  separator: number,
  floor: number,
): { name: string; start: number } | undefined {
  let end = separator;
  while (end > floor && separator - end < MAX_KEY_LENGTH && isBlank(text.charCodeAt(end - 1))) end--;
  const last = text[end - 1];
  if (end > floor && (last === '"' || last === "'")) {
    let open = end - 2;
    while (open >= floor && end - open <= MAX_KEY_LENGTH && text[open] !== last) open--;
    return open < floor || text[open] !== last
      ? undefined
      : { name: text.slice(open + 1, end - 1), start: open };
  }
  let start = end;
  while (start > floor && end - start < MAX_KEY_LENGTH && isKeyCharacter(text.charCodeAt(start - 1))) start--;
  return start === end ? undefined : { name: text.slice(start, end), start };
}

/**
 * Whether the key is `code` or `state` as a URL parameter: right after `?`, `&`, `#` or `;`
 * (raw, or percent-encoded inside the key's run, as in `%3Fcode`), or opening the text.
 */
function isCallbackParameter(text: string, key: { name: string; start: number }): boolean {
  const decoded = percentDecoded(key.name);
  const delimited = PARAMETER_AFTER_DELIMITER.exec(decoded);
  if (delimited) return CALLBACK_PARAMETERS.has((delimited[1] ?? '').toLowerCase());
  const opensParameter = key.start === 0 || PARAMETER_DELIMITERS.includes(text[key.start - 1] ?? '');
  return opensParameter && CALLBACK_PARAMETERS.has(decoded.toLowerCase());
}

const PARAMETER_DELIMITERS = '?&#;';
/** What follows the last delimiter of a decoded key (at most MAX_KEY_LENGTH characters). */
const PARAMETER_AFTER_DELIMITER = /[?&#;]([^?&#;]*)$/;

/** The value after the separator, quotes included, and what replaces it. */
function valueAfter(
  text: string,
  separator: number,
  separatorLength: number,
): { start: number; end: number; blanked: string } {
  let start = separator + separatorLength;
  while (start < text.length && isBlank(text.charCodeAt(start))) start++;
  const quote = text[start];
  if (quote === '"' || quote === "'") {
    let end = start + 1;
    while (end < text.length && text[end] !== quote) end += text[end] === '\\' ? 2 : 1;
    return { start, end: Math.min(end + 1, text.length), blanked: `${quote}${REDACTED}${quote}` };
  }
  if (quote === '{' || quote === '[') return { start, end: endOfNested(text, start), blanked: REDACTED };
  const stops = text[separator] === ':' ? HEADER_VALUE_END : FORM_VALUE_END;
  let end = start;
  while (end < text.length && !stops.has(text[end] ?? '')) end++;
  return { start, end, blanked: REDACTED };
}

/** Where the object or array opening at `start` closes (or the text ends), skipping strings. */
function endOfNested(text: string, start: number): number {
  let depth = 0;
  for (let at = start; at < text.length; at++) {
    const char = text[at];
    if (char === '"') {
      for (at++; at < text.length && text[at] !== '"'; at++) if (text[at] === '\\') at++;
    } else if (char === '{' || char === '[') {
      depth++;
    } else if ((char === '}' || char === ']') && --depth === 0) {
      return at + 1;
    }
  }
  return text.length;
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * `[A-Za-z0-9_.[\]%-]`: the characters of a header name or a form field (`user[password]`,
 * percent-encoded as `user%5Bpassword%5D`).
 */
function isKeyCharacter(code: number): boolean {
  return (
    code === 0x25 ||
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x2d ||
    code === 0x2e ||
    code === 0x5b ||
    code === 0x5d
  );
}

function scrub(value: unknown, seen: WeakSet<object>, depth: number): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => scrub(item, seen, depth + 1));
    if (value instanceof Error) return scrubMembers(errorMembers(value), seen, depth);
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return scrub(toJSON.call(value), seen, depth + 1);
    return scrubMembers(Object.entries(value), seen, depth);
  } catch {
    return '[unserializable]';
  } finally {
    seen.delete(value);
  }
}

function scrubMembers(
  members: [string, unknown][],
  seen: WeakSet<object>,
  depth: number,
): Record<string, unknown> {
  // Null prototype: a member named `__proto__` is kept as data, not taken as the prototype.
  const result: Record<string, unknown> = Object.create(null);
  for (const [name, member] of members) {
    if (member === undefined || typeof member === 'function') continue;
    // A name can be a secret too (a map keyed by link hashes).
    result[blankSecretRuns(name)] = isSecretName(name) ? REDACTED : scrub(member, seen, depth + 1);
  }
  return result;
}

/** `cause` and an AggregateError's `errors` are not enumerable, so they are asked for by name. */
function errorMembers(error: Error): [string, unknown][] {
  const members: [string, unknown][] = [
    ['type', error.constructor?.name || error.name],
    ['message', error.message],
    ['stack', error.stack],
    ...Object.entries(error).filter(([name]) => name !== 'name'),
  ];
  if (error.cause !== undefined) members.push(['cause', error.cause]);
  if (error instanceof AggregateError) members.push(['errors', error.errors]);
  return members;
}
