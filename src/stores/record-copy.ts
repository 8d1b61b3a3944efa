/**
 * A copy of a stored record that shares nothing with it: what the memory stores and the
 * caches hand out, so that a caller changing what it read changes no other reader's.
 *
 * Records here are flat (strings, numbers, null, arrays of those, dates), so one level of
 * copying is a deep copy; it is about twenty times faster than structuredClone, which took
 * a tenth of an authenticated request on the memory stores.
 */
export function copyRecord<T extends object>(record: T): T {
  const copy = { ...record };
  for (const key of Object.keys(copy) as (keyof T)[]) {
    const value: unknown = copy[key];
    if (Array.isArray(value)) copy[key] = [...value] as T[keyof T];
    else if (value instanceof Date) copy[key] = new Date(value.getTime()) as T[keyof T];
  }
  return copy;
}
