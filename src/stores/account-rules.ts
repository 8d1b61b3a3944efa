import type { Account, AccountSortField } from '../accounts/model.ts';

/**
 * The key an identity is unique under and found by. Identities compare without regard to
 * case: `Ada@example.com` and `ada@example.com` are one address, `Admin` and `admin` one
 * administrator. Every backend stores this key rather than relying on collations, which
 * FerretDB does not support.
 */
export function identityKey(identity: string): string {
  return identity.toLowerCase();
}

/** Sort order shared by every backend, ties broken by id so pages are stable. */
export function compareAccounts(
  a: Account,
  b: Account,
  field: AccountSortField,
  order: 'asc' | 'desc',
): number {
  const x = a[field];
  const y = b[field];
  const primary = x < y ? -1 : x > y ? 1 : 0;
  const result = primary !== 0 ? primary : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  return order === 'asc' ? result : -result;
}
