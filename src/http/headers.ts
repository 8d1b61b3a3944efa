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
