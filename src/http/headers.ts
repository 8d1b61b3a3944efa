import type { ServerResponse } from 'node:http';

/** A deprecated route (CONFIG_FILE `deprecations`): its answers say so (RFC 9745, RFC 8594). */
export interface Deprecation {
  /** When the route was (or will be) deprecated. */
  since: Date;
  sunset: Date;
  /** Where the sunset policy is described (RFC 8594 §6). */
  link: string;
}

/**
 * Static response headers per route name (`*` for every route), plus the deprecation headers
 * of a deprecated route. Computed once per route at start, then copied onto each response.
 */
export type HeaderSet = readonly (readonly [string, string])[];

export function headersForRoute(
  routeName: string | undefined,
  configured: Readonly<Record<string, Readonly<Record<string, string>>>>,
  deprecation: Deprecation | undefined,
): HeaderSet {
  const merged: Record<string, string> = {
    ...configured['*'],
    ...(routeName ? configured[routeName] : undefined),
  };
  if (deprecation) {
    // RFC 9745 §2: a Structured Field Date; RFC 8594 §3: an HTTP-date.
    merged.Deprecation = `@${Math.floor(deprecation.since.getTime() / 1000)}`;
    merged.Sunset = deprecation.sunset.toUTCString();
    merged.Link = `<${deprecation.link}>; rel="sunset"`;
  }
  return Object.entries(merged);
}

export function applyHeaders(res: ServerResponse, headers: HeaderSet): void {
  for (const [name, value] of headers) res.setHeader(name, value);
}

/** The response's `Vary` so far, as one value. */
export function varyOf(res: ServerResponse): string | undefined {
  const current = res.getHeader('Vary');
  if (current === undefined) return undefined;
  return Array.isArray(current) ? current.join(', ') : String(current);
}

/** `vary` with `field` added, keeping what configured headers put there. */
export function withVaryField(vary: string | undefined, field: string): string {
  if (vary === undefined || vary === '') return field;
  const fields = vary.split(',').map((name) => name.trim().toLowerCase());
  return fields.includes('*') || fields.includes(field.toLowerCase()) ? vary : `${vary}, ${field}`;
}

/** Says the response varies by the request header `field` too. */
export function addVary(res: ServerResponse, field: string): void {
  res.setHeader('Vary', withVaryField(varyOf(res), field));
}

/** `headers` with `field` added to their `Vary`, or a `Vary` of it. */
export function withVary(headers: HeaderSet, field: string): HeaderSet {
  const vary = headers.find(([name]) => name.toLowerCase() === 'vary');
  return vary
    ? headers.map(([name, value]) => (name === vary[0] ? [name, withVaryField(value, field)] : [name, value]))
    : [...headers, ['Vary', field]];
}
