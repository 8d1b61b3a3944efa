/**
 * What an account is (its kinds, statuses, roles and the fields a listing sorts by), and the
 * stores the accounts domain needs: the accounts themselves, and the one-time tokens of the
 * links mailed to their holders. Every backend implements these stores (src/stores/), chosen
 * only by its URL; nothing here knows which one it talks to.
 */

export type AccountKind = 'admin' | 'user';

/** The lists the schemas, the listing and the CLI are built from; the types follow from them. */
export const ACCOUNT_STATUSES = ['pending', 'active', 'inactive', 'deleted'] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];
export const ADMIN_ROLES = ['admin', 'superuser'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];
export const ACCOUNT_SORT_FIELDS = ['identity', 'createdAt', 'updatedAt', 'status'] as const;
export type AccountSortField = (typeof ACCOUNT_SORT_FIELDS)[number];

export interface Account {
  id: string;
  identity: string;
  passwordHash: string;
  firstName: string | null;
  lastName: string | null;
  status: AccountStatus;
  /** Admin accounts: `admin` and/or `superuser`. User accounts: empty. */
  roles: AdminRole[];
  /**
   * Part of the credential stamp the account's tokens carry: a fresh random value whenever
   * every session of the account ends. Empty until the first such change, and on accounts
   * stored before it existed.
   */
  sessionKey: string;
  /**
   * Whether the account has an avatar (avatar-store.ts), so that its representation links it
   * without asking the avatar store. Written after the image and cleared after its removal.
   */
  hasAvatar: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type AccountChanges = Partial<Omit<Account, 'id' | 'createdAt'>>;

export interface AccountQuery {
  status?: AccountStatus;
  sort: AccountSortField;
  order: 'asc' | 'desc';
  /** 1-based page number. */
  page: number;
  limit: number;
}

export interface AccountStore {
  findById(id: string): Promise<Account | null>;
  /** Identity lookup. Identities compare without regard to case, and are unique that way. */
  findByIdentity(identity: string): Promise<Account | null>;
  /** Throws DuplicateIdentity when the identity is taken. */
  create(account: Account): Promise<void>;
  /** Creates the account unless one with that identity exists; never changes an existing one. */
  createIfAbsent(account: Account): Promise<boolean>;
  /** Returns the updated account, or null when it does not exist. Throws DuplicateIdentity. */
  update(id: string, changes: AccountChanges): Promise<Account | null>;
  delete(id: string): Promise<boolean>;
  list(query: AccountQuery): Promise<{ items: Account[]; total: number }>;
  /** The accounts with that status and role, leaving out the one whose id is `except`. */
  count(filter: { status?: AccountStatus; role?: AdminRole; except?: string }): Promise<number>;
}

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

export type OneTimeTokenPurpose = 'activation' | 'reset' | 'identity-change';

/**
 * A single-use, expiring hash mailed to an account holder (activation, password reset and
 * change of address links). Only a SHA-256 digest of the hash is stored: whoever reads the
 * store cannot use the links.
 */
export interface OneTimeToken {
  purpose: OneTimeTokenPurpose;
  /** Hex SHA-256 digest of the hash in the link. */
  digest: string;
  /** The user account the link acts on. */
  accountId: string;
  expiresAt: Date;
  /** A change of address link: the address the account moves to, mailed the link. */
  newIdentity?: string;
}

export interface OneTimeTokenStore {
  save(token: OneTimeToken): Promise<void>;
  /**
   * Removes and returns the unexpired token with this purpose and digest, atomically: of two
   * concurrent calls with one digest at most one gets it. Expired or unknown: null.
   */
  consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null>;
  /** The unexpired token, without using it up (to tell a client whether a link is still good). */
  find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null>;
  /** Forgets the account's tokens, of one purpose or (without a purpose) all of them. */
  deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<void>;
}
