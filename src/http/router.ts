import { parse as parsePattern } from 'regexparam';

/**
 * Matches a request against the route table: the first route, in table order, whose method
 * and path pattern match. Patterns are regexparam's (`/users/:id`): case-insensitive, with
 * an optional trailing slash. Routes are grouped by method, so a request is tested against
 * the routes of its own method only, and matching stops at the first: the table is read on
 * every request, and a router that tries every route for every request (polka's does, to
 * chain middleware the pipeline has no use for) costs the read path more than its handler.
 */
export interface Router<T> {
  /**
   * The route for this method and path, with its parameters; undefined when none matches. A
   * route `admits` refuses is passed over, as if it were not in the table.
   */
  match(
    method: string,
    path: string,
    admits?: (route: T) => boolean,
  ): { route: T; params: Record<string, string> } | undefined;
  /** The methods of the routes whose pattern matches this path, in table order (405's Allow). */
  methodsOf(path: string): { method: string; route: T }[];
}

interface Entry<T> {
  method: string;
  pattern: RegExp;
  keys: string[];
  route: T;
}

export function createRouter<T>(routes: readonly { method: string; path: string; route: T }[]): Router<T> {
  const entries: Entry<T>[] = routes.map(({ method, path, route }) => ({
    method,
    ...parsePattern(path),
    route,
  }));
  const byMethod = new Map<string, Entry<T>[]>();
  for (const entry of entries) byMethod.set(entry.method, [...(byMethod.get(entry.method) ?? []), entry]);

  return {
    match(method, path, admits) {
      for (const { pattern, keys, route } of byMethod.get(method) ?? []) {
        const found = pattern.exec(path);
        if (found === null || (admits && !admits(route))) continue;
        // Names come from the route table, never from the request.
        const params: Record<string, string> = {};
        const encoded = path.includes('%');
        for (let i = 0; i < keys.length; i++) {
          const value = found[i + 1] ?? '';
          params[keys[i] as string] = encoded ? decodeSegment(value) : value;
        }
        return { route, params };
      }
      return undefined;
    },
    methodsOf: (path) => entries.filter(({ pattern }) => pattern.test(path)),
  };
}

/** A percent-encoded parameter, decoded; left as sent when it is not valid UTF-8 escapes. */
function decodeSegment(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The path and the query (with its `?`) of a request target in origin-form (RFC 9112
 * §3.2.1). A fragment has no place in a request target; one sent anyway is dropped.
 */
export function splitTarget(url: string): { path: string; search: string } {
  const hash = url.indexOf('#');
  const target = hash === -1 ? url : url.slice(0, hash);
  const query = target.indexOf('?');
  return query === -1
    ? { path: target, search: '' }
    : { path: target.slice(0, query), search: target.slice(query) };
}
