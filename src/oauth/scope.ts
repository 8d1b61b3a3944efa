import { InvalidScope } from '../errors.ts';
import type { Scope, ScopeStore } from './model.ts';

/**
 * The scope the service registers at its first start (the seed data), the one every token
 * request names. Scopes are only ever added, and only by the seed.
 */
export const API_SCOPE: Readonly<Scope> = { name: 'api', description: 'Access to the API' };

/**
 * RFC 6749 §3.3: a space-delimited list of case-sensitive scope names. Every name must be a
 * registered scope. Returns the normalised list (deduplicated, single spaces). No default
 * scope is configured, so a request without one never gets this far (see grant.ts).
 */
export async function resolveScope(requested: string, scopes: ScopeStore): Promise<string> {
  const names = [...new Set(requested.split(' ').filter(Boolean))];
  if (names.length === 0) throw new InvalidScope();
  for (const name of names) if (!(await scopes.findByName(name))) throw new InvalidScope();
  return names.join(' ');
}

/** RFC 6749 §6: a refresh may narrow the scope of the original grant, never widen it. */
export function isWithin(requested: string, granted: string): boolean {
  const allowed = new Set(granted.split(' '));
  return requested.split(' ').every((name) => allowed.has(name));
}
