/**
 * What an account is (its kinds, statuses, roles and the fields a listing sorts by), and the
 * stores the accounts domain needs: the accounts themselves, and the one-time tokens of the
 * links mailed to their holders. Every backend implements these stores (src/stores/), chosen
 * only by its URL; nothing here knows which one it talks to.
 */

import type { AvatarGeneration } from './avatar-store.ts';

export type AccountKind = 'admin' | 'user';

/** The lists the schemas, the listing and the CLI are built from; the types follow from them. */
export const ACCOUNT_STATUSES = ['pending', 'active', 'inactive', 'deleted'] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];
export const ADMIN_ROLES = ['admin', 'superuser'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];
/** Every field of a listed account but `roles` (a set: a listing filters by it instead). */
export const ACCOUNT_SORT_FIELDS = [
  'identity',
  'firstName',
  'lastName',
  'status',
  'createdAt',
  'updatedAt',
  'id',
] as const;
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
   * without asking the avatar store. Written after every change to the image, as of that
   * change's generation (AccountStore.writeAvatarFlag).
   */
  hasAvatar: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type AccountChanges = Partial<Omit<Account, 'id' | 'createdAt'>>;

export interface AccountQuery {
  /**
   * Only accounts whose identity, first or last name contains this text, both compared
   * folded (`searchFold`): literal text, never a pattern.
   */
  search?: string;
  status?: AccountStatus;
  /** Only accounts holding this role (administrators). */
  role?: AdminRole;
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
  /**
   * Writes `hasAvatar` (and the other changes) as of the avatar change of that generation,
   * unless the account already reflects a later one (AvatarStore): one conditional write,
   * so that flags written out of order end as the latest change left the image. Returns the
   * account as it is after (written or not), or null when it does not exist.
   */
  writeAvatarFlag(
    id: string,
    generation: AvatarGeneration,
    changes: Pick<AccountChanges, 'hasAvatar' | 'updatedAt'>,
  ): Promise<Account | null>;
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

const ASCII = /^\p{ASCII}*$/u;

/**
 * Text as a search compares it, on every backend alike: compatibility-normalised (NFKC: `ﬁ`
 * is `fi`, a decomposed `ä` the composed one, a full-width `Ａ` an `A`), then case-folded
 * code point by code point, lower, upper, then lower case again, so that `ẞ`, `ß` and `SS`
 * all become `ss`, and `Σ`, `ς` and `σ` all `σ`. Never by context (JavaScript lower-cases a
 * word-final `Σ` to `ς`), so a word folds alike wherever it stands. The backends store the
 * folded fields beside the account and match folded text against them, rather than rely on a
 * database's case-insensitive matching, which differs between them beyond ASCII.
 */
export function searchFold(text: string): string {
  const normalized = text.normalize('NFKC');
  if (ASCII.test(normalized)) return normalized.toLowerCase();
  let folded = '';
  for (const char of normalized) folded += char.toLowerCase().toUpperCase().toLowerCase();
  return folded.normalize('NFKC');
}

/**
 * The fields a search reads, folded. A name not set folds to the empty string, which no
 * search matches and which sorts first.
 */
export interface FoldedText {
  identity: string;
  firstName: string;
  lastName: string;
}

export function foldedText(account: Pick<Account, 'identity' | 'firstName' | 'lastName'>): FoldedText {
  return {
    identity: searchFold(account.identity),
    firstName: searchFold(account.firstName ?? ''),
    lastName: searchFold(account.lastName ?? ''),
  };
}

/** Whether folded text matches a search, `search` being folded too. */
export function matchesSearch(text: FoldedText, search: string): boolean {
  return text.identity.includes(search) || text.firstName.includes(search) || text.lastName.includes(search);
}

export type SortKey = string | number;

/**
 * What a listing orders by, compared with `<` (see compareSortKeys): the folded text of the
 * text fields (so case never splits the order: `ada` and `Ada` sort together, and names not
 * set come first) in code point order, as MongoDB compares strings without a collation; the
 * time of the dates; the value of the others.
 */
export function sortKey(account: Account, field: AccountSortField, folded = foldedText(account)): SortKey {
  switch (field) {
    case 'identity':
    case 'firstName':
    case 'lastName':
      return inCodePointOrder(folded[field]);
    case 'createdAt':
    case 'updatedAt':
      return account[field].getTime();
    default:
      return account[field];
  }
}

const ABOVE_SURROGATES = /[\uD800-\uFFFF]/;
const UNITS_FROM_D800 = /[\uD800-\uFFFF]/g;

/**
 * Text whose UTF-16 order (what `<` compares) is the code point order (UTF-8 byte order, as
 * MongoDB compares strings) of `text`. They differ only where surrogates meet U+E000–U+FFFF:
 * `<` puts a character beyond U+FFFF (a surrogate pair) before those. Moving the surrogates
 * above U+E000–U+FFFF, and those down into the room left, restores the order. Most text has
 * neither, and is returned as it is.
 */
function inCodePointOrder(text: string): string {
  if (!ABOVE_SURROGATES.test(text)) return text;
  return text.replace(UNITS_FROM_D800, (unit) => {
    const code = unit.charCodeAt(0);
    return String.fromCharCode(code >= 0xe000 ? code - 0x800 : code + 0x2000);
  });
}

/** The order every backend sorts in (each field's keys are of one kind). */
export function compareSortKeys(x: SortKey, y: SortKey): number {
  return x === y ? 0 : x < y ? -1 : 1;
}

/**
 * The order of a listing on every backend: by sort key, ties broken by id (in the same
 * direction) so pages are stable.
 */
export function compareListed(
  a: { id: string; key: SortKey },
  b: { id: string; key: SortKey },
  order: 'asc' | 'desc',
): number {
  const primary = compareSortKeys(a.key, b.key);
  const result = primary !== 0 ? primary : compareSortKeys(a.id, b.id);
  return order === 'asc' ? result : -result;
}

export type OneTimeTokenPurpose = 'activation' | 'reset' | 'identity-change';

export const ONE_TIME_TOKEN_PURPOSES: readonly OneTimeTokenPurpose[] = [
  'activation',
  'reset',
  'identity-change',
];

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
  /**
   * An activation or password reset link: the address it was mailed to, the account's identity
   * then. The link acts only while the account still has that identity (compared by
   * `identityKey`), so one mailed to an address the account has since left is refused. Absent
   * on links saved before links recorded it: those act until they expire.
   */
  mailedTo?: string;
  /** A change of address link: the wrong passwords tried with it so far (none when absent). */
  wrongPasswords?: number;
  /**
   * The generation of the account's links of this purpose the token was issued in, set by the
   * store (absent: before the first kill). `deleteForAccount` starts a new generation, and a
   * token of an earlier one is dead wherever it is, so one put back after the kill stays dead.
   */
  generation?: string;
}

export interface OneTimeTokenStore {
  /** Stores a new token, in the current generation of its account's links of its purpose. */
  save(token: OneTimeToken): Promise<void>;
  /**
   * Stores again a token that `consume` returned, in the generation it carries: when the
   * account's links of its purpose were killed since, it is not found nor consumed.
   */
  putBack(token: OneTimeToken): Promise<void>;
  /**
   * Removes and returns the unexpired token with this purpose and digest, atomically: of two
   * concurrent calls with one digest at most one gets it, and what it returns is what it
   * removed. Expired, unknown or of a killed generation: null.
   */
  consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null>;
  /** The unexpired live token, without using it up (to tell a client whether a link is still good). */
  find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null>;
  /**
   * Kills the account's tokens, of one purpose or (without a purpose) all of them: they are
   * forgotten, and a new generation begins, so a token that a use holds meanwhile is dead
   * when put back. The new generation is first recorded, then the tokens deleted. Returns it:
   * a token put back with it lives (the link whose use killed the others, should that use fail).
   */
  deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<string>;
}
