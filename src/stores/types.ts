/**
 * The storage contract. Every backend (memory, MongoDB, Redis) implements these interfaces
 * and is chosen only by its URL; nothing above this file knows which one it talks to.
 */

export type AccountKind = 'admin' | 'user';
export type AccountStatus = 'pending' | 'active' | 'inactive' | 'deleted';
export type AdminRole = 'admin' | 'superuser';

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
  createdAt: Date;
  updatedAt: Date;
}

export type AccountChanges = Partial<Omit<Account, 'id' | 'createdAt'>>;

export type AccountSortField = 'identity' | 'createdAt' | 'updatedAt' | 'status';

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
  count(filter: { status?: AccountStatus; role?: AdminRole }): Promise<number>;
}

export interface OAuthClient {
  id: string;
  /** Sent as `client_id`. */
  name: string;
  /** Hex SHA-256 digest of the secret: client secrets are high-entropy machine secrets. */
  secretDigest: string;
  /** Which account store the password grant authenticates against for this client. */
  accountKind: AccountKind;
  createdAt: Date;
}

export interface ClientStore {
  findByName(name: string): Promise<OAuthClient | null>;
  createIfAbsent(client: OAuthClient): Promise<boolean>;
  updateSecret(name: string, secretDigest: string): Promise<boolean>;
}

export interface Scope {
  name: string;
  description: string;
}

export interface ScopeStore {
  findByName(name: string): Promise<Scope | null>;
  createIfAbsent(scope: Scope): Promise<boolean>;
}

/** What a refresh token stands for. The token itself is never stored, only its HMAC. */
export interface RefreshTokenGrant {
  /** Token family: every token rotated from one login shares it (RFC 9700 §4.14.2). */
  familyId: string;
  clientId: string;
  accountKind: AccountKind;
  subject: string;
  scope: string;
  /** The account's credential stamp at login: the token dies when the account's sessions end. */
  credentialStamp: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * A token's life: unused → consumed (a refresh is under way) → rotated (its successor was
 * saved). Telling the last two apart is what lets a double submit fail quietly while a
 * replay of a rotated token, which means it leaked, revokes the family.
 */
export type ConsumeResult =
  /** `attempt` names this consume, so only it can release the token again. */
  | { outcome: 'consumed'; grant: RefreshTokenGrant; attempt: string }
  /** Consumed by a refresh that has not saved a successor: a concurrent duplicate. */
  | { outcome: 'in-flight' }
  /** The token was already rotated: the caller must treat the family as compromised. */
  | { outcome: 'reused'; grant: RefreshTokenGrant }
  | { outcome: 'revoked' }
  | { outcome: 'unknown' };

export interface RefreshTokenStore {
  /**
   * Stores a new, unused token under its digest until the grant expires, marks the token it
   * replaces (same family) rotated, and returns true; returns false, storing nothing, when
   * the family has been revoked (a refresh that raced a revocation must not plant a live
   * token in a dead family).
   */
  save(tokenDigest: string, grant: RefreshTokenGrant, replacesDigest?: string): Promise<boolean>;
  /**
   * Marks the token consumed, atomically: of concurrent calls with one digest exactly one
   * gets `consumed`, the others `in-flight` until its successor is saved, `reused` after.
   * A used token stays known until it expires.
   */
  consume(familyId: string, tokenDigest: string): Promise<ConsumeResult>;
  /**
   * Undoes a consume whose refresh was refused (the account checks, a backend failure), so a
   * refusal never burns the token: it becomes unused again, atomically, only while it is
   * still consumed by that `attempt`. A rotated token, a revoked family, or a token consumed
   * again since, stays as it is.
   */
  release(familyId: string, tokenDigest: string, attempt: string): Promise<void>;
  /** Revokes every token of the family, used or not. */
  revokeFamily(familyId: string): Promise<void>;
  /** Revokes every family issued to the account (password change, deletion). */
  revokeSubject(accountKind: AccountKind, subject: string): Promise<void>;
}

export type OneTimeTokenPurpose = 'activation' | 'reset';

/**
 * A single-use, expiring hash mailed to an account holder (activation and password reset
 * links). Only a SHA-256 digest of the hash is stored: whoever reads the store cannot use the links.
 */
export interface OneTimeToken {
  purpose: OneTimeTokenPurpose;
  /** Hex SHA-256 digest of the hash in the link. */
  digest: string;
  /** The user account the link acts on. */
  accountId: string;
  expiresAt: Date;
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

export interface Stores {
  admins: AccountStore;
  users: AccountStore;
  clients: ClientStore;
  scopes: ScopeStore;
  refreshTokens: RefreshTokenStore;
  /** Activation and password-reset links; they live beside the accounts. */
  oneTimeTokens: OneTimeTokenStore;
  /** Closes connections; safe to call once at shutdown. */
  close(): Promise<void>;
}
