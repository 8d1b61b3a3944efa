/**
 * Removes secrets from anything about to be written to a log, at any depth. pino's `redact`
 * paths name fixed positions (a wildcard spans one level); an error thrown by a library can
 * carry a request config, headers or a body several levels down, so every line also passes
 * through this walk, which blanks every member whose name says it holds a secret.
 */

export const REDACTED = '[redacted]';

/**
 * Member names (lower-cased, punctuation removed) that hold secrets: `password`,
 * `passwordConfirm`, `client_secret`, `refresh_token`, `Authorization`, `Error-Reporting-Token`,
 * `Cookie`, `apiKey`, `code_verifier` (PKCE), ... `passwordHash` too: a hash is not for the log either.
 */
const SECRET_NAME = /password|passwd|secret|token|authorization|cookie|apikey|privatekey|credential|verifier/;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

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
 * Secrets inside text: a credential after `Bearer`/`Basic`, and the value of a secret-named
 * member in JSON (`"password":"..."`) or form/query syntax (`password=...`), as found in the
 * message or serialized request of an error thrown by an HTTP or database client.
 */
export function scrubText(text: string): string {
  return text
    .replace(/\b(Bearer|Basic)\s+[\w.~+/=-]{6,}/gi, `$1 ${REDACTED}`)
    .replace(SECRET_IN_JSON, `$1"${REDACTED}"`)
    .replace(SECRET_IN_FORM, `$1${REDACTED}`);
}

const SECRET_WORD = 'password|passwd|secret|token|authorization|cookie|api[-_]?key|credential|verifier';
const SECRET_IN_JSON = new RegExp(`("[^"]*(?:${SECRET_WORD})[^"]*"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'gi');
const SECRET_IN_FORM = new RegExp(`\\b([\\w-]*(?:${SECRET_WORD})[\\w-]*=)[^&\\s"']+`, 'gi');

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
  const result: Record<string, unknown> = {};
  for (const [name, member] of members) {
    if (member === undefined || typeof member === 'function') continue;
    result[name] = isSecretName(name) ? REDACTED : scrub(member, seen, depth + 1);
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
