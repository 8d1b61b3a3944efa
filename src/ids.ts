const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether the string is a UUID in its hyphenated form, of any version and either case: the
 * shape of every id the service hands out. The request schemas' `uuid` format and the
 * accounts domain ask this one question, so they cannot disagree on what an id looks like.
 */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
