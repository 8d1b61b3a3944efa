import type { AccountKind } from '../accounts/model.ts';

/**
 * What the OAuth domain is made of: the grant and client types, clients, scopes, the records
 * behind refresh tokens and authorization codes, and the stores that keep them. Every backend
 * (memory, MongoDB, Redis) implements these stores (src/stores/), chosen only by its URL;
 * nothing here knows which one it talks to.
 */

/** The grants the service knows (RFC 6749 §4, §6); a client names those it may use. */
export const GRANT_TYPES = ['password', 'refresh_token', 'client_credentials', 'authorization_code'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/**
 * RFC 6749 §2.1. A confidential client authenticates with its secret; a public one (a
 * browser or native app, which cannot keep a secret) names itself only, its
 * `token_endpoint_auth_method` is `none`.
 */
export const CLIENT_TYPES = ['confidential', 'public'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

/**
 * What a client could do before clients named their grants: every grant of that time. Clients
 * stored then, the seeded `admin` and `frontend` among them, keep exactly these.
 */
export const LEGACY_CLIENT_GRANTS: readonly GrantType[] = ['password', 'refresh_token', 'client_credentials'];

export interface OAuthClient {
  id: string;
  /** Sent as `client_id`. */
  name: string;
  type: ClientType;
  /**
   * Hex SHA-256 digest of a confidential client's secret (client secrets are high-entropy
   * machine secrets); null for a public client, which has none.
   */
  secretDigest: string | null;
  /**
   * After a rotation, the digest of the secret before it, still accepted until
   * `previousSecretExpiresAt` so that the client's running copies can move to the new one;
   * both null when there is none. One past its expiry counts as none.
   */
  previousSecretDigest: string | null;
  previousSecretExpiresAt: Date | null;
  /** Which account store the client signs people in to. */
  accountKind: AccountKind;
  /** Where the authorization code grant may send the browser back, compared exactly (RFC 9700 §2.1). */
  redirectUris: string[];
  /** The grants the client may use; any other is `unauthorized_client`. */
  grants: GrantType[];
  createdAt: Date;
  updatedAt: Date;
}

/** What changes after creation: the name, type and account store of a client stay. */
export const CHANGEABLE_CLIENT_FIELDS = [
  'secretDigest',
  'previousSecretDigest',
  'previousSecretExpiresAt',
  'redirectUris',
  'grants',
  'updatedAt',
] as const satisfies readonly (keyof OAuthClient)[];

export type ClientChanges = Partial<Pick<OAuthClient, (typeof CHANGEABLE_CLIENT_FIELDS)[number]>>;

export interface ClientStore {
  findByName(name: string): Promise<OAuthClient | null>;
  /** Every client, ordered by name: clients are few, registered by hand. */
  list(): Promise<OAuthClient[]>;
  /** Creates the client unless one with that name exists; never changes an existing one. */
  createIfAbsent(client: OAuthClient): Promise<boolean>;
  /** The updated client, or null when none has that name. */
  update(name: string, changes: ClientChanges): Promise<OAuthClient | null>;
  delete(name: string): Promise<boolean>;
}

export interface Scope {
  name: string;
  description: string;
}

export interface ScopeStore {
  findByName(name: string): Promise<Scope | null>;
  createIfAbsent(scope: Scope): Promise<boolean>;
}

/** What a refresh token stands for. The token itself is never stored, only its MAC. */
export interface RefreshTokenFamily {
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
 * A family's one live token, as the store knows it: which rotation it is and the MAC it
 * carries. A token of an older generation is recognised by its number alone, so a family is
 * one record however often it rotates.
 */
export interface RefreshTokenGeneration {
  generation: number;
  mac: string;
}

/**
 * The longest retry window: time for a client's retries with back-off through a Redis
 * failover; longer only keeps a replaced token redeemable after its client has given up.
 * Retries answered within the window start it again, but never past this long after the
 * rotation's first answer.
 */
export const MAX_REFRESH_TOKEN_RETRY_SECONDS = 300;

/**
 * What a rotation keeps for a retry of the token it replaced, until the end of the retry
 * window: the successor, sealed so that only the holder of the replaced token can open it.
 * Both times are as of this answer; a store that counts an answer only later (once replicas
 * confirm it) moves them on by as much.
 */
export interface RefreshTokenRetry {
  sealedSuccessor: string;
  /** End of the retry window, epoch milliseconds. */
  until: number;
  /**
   * The latest end of the window, epoch milliseconds, were this the rotation's first answer
   * (`MAX_REFRESH_TOKEN_RETRY_SECONDS` on): the store keeps the first answer's, and no
   * retry moves the window past it.
   */
  limit: number;
}

/**
 * What a presented token (its MAC verified by the caller) is now. A family lives one way:
 * its current token is rotated, once, into its successor, and the token it replaced is
 * answered with that successor for the retry window while the successor is unused; then
 * the successor is rotated, and so on, until the family expires or is revoked.
 */
export type RefreshTokenState =
  /** The family's current token, never used: the one a refresh rotates. */
  | { state: 'current'; family: RefreshTokenFamily }
  /** The token the last rotation replaced, within its retry window, the successor unused. */
  | { state: 'retry'; family: RefreshTokenFamily; sealedSuccessor: string }
  /** Any other earlier token (older, after its window, or with another MAC): it leaked. */
  | { state: 'reused'; family: RefreshTokenFamily }
  | { state: 'revoked' }
  | { state: 'unknown' };

/**
 * The last rotation's retry record, for the token it replaced (by its MAC). Behind Redis
 * replicas an answer handing the successor out counts once they confirm it: until then the
 * record carries that answer's mark (`pending`) and its window has not started, and the
 * first answer confirmed sets `limit`.
 */
export interface RefreshRetryRecord {
  replacedMac: string;
  sealedSuccessor: string;
  /** End of the retry window, epoch milliseconds. */
  until: number;
  /** The latest end of the window; absent until the rotation's first answer counts. */
  limit?: number;
  /** The mark of the last answer still waiting for the replicas (a fresh MAC). */
  pending?: string;
}

/**
 * A family as a store keeps it: what its tokens stand for, its one live token, whether it is
 * revoked, and the last rotation's retry record. What each presented token is, and what a
 * rotation makes of the record, is decided in one place (`refresh-family.ts`); a store only
 * keeps the record.
 */
export interface RefreshFamilyRecord {
  family: RefreshTokenFamily;
  current: RefreshTokenGeneration;
  revoked: boolean;
  retry?: RefreshRetryRecord;
}

/** A family's record as read, with the version a compare-and-set of it must name. */
export interface VersionedFamilyRecord {
  record: RefreshFamilyRecord;
  version: number;
  /**
   * Until when the store lists the family under its account, where that is not simply its
   * expiry: the store's own bookkeeping, handed back to it with the next write.
   */
  listedUntil?: number;
}

/**
 * Family records with a version each, written only by compare-and-set: a store that knows
 * nothing of the rules. `read` answers the record even past its expiry (the rules decide);
 * a store may forget it any time after.
 */
export interface RefreshFamilyRecords {
  /**
   * Whether a write counts only once replicas confirm it, some time after it was made: the
   * rules then start a retry window only once its answer is confirmed.
   */
  readonly acknowledged: boolean;
  read(familyId: string): Promise<VersionedFamilyRecord | null>;
  /**
   * Stores the record in place of `base` (null: no record) when the family's stored version
   * is still base's, under a new version (never 0, and never one the family had, even on
   * another server after a failover), and answers it as stored once the write counts, or
   * undefined when the stored version was another; the family is listed under its account
   * while it lives, and unlisted once revoked. Rejects when the write may have been made
   * without counting (replicas that did not confirm it): the caller reads again.
   */
  write(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined>;
  /**
   * The same compare-and-set for a change to the retry record alone (its window), which no
   * answer given waits for: it counts once made, and leaves the listing as it is.
   */
  amend(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined>;
  /**
   * The ids of the account's families as listed: every one that lives, and perhaps some
   * that no longer do (a store may list a family for a while past its expiry).
   */
  familiesOf(accountKind: AccountKind, subject: string): Promise<string[]>;
  /**
   * Drops these families from the account's listing: ones just revoked, which a rotation
   * racing the revocation may have listed again. A family listed since (a new sign-in) is
   * not among them and stays.
   */
  unlist(accountKind: AccountKind, subject: string, familyIds: readonly string[]): Promise<void>;
}

/** What a rotation did: rotated the token, or found it no longer current, as `inspect` would say. */
export type RefreshTokenRotation = { state: 'rotated' } | Exclude<RefreshTokenState, { state: 'current' }>;

/**
 * The refresh tokens' store as the OAuth domain uses it; its rules are those of
 * `refresh-family.ts`, which VersionedRefreshTokenStore applies over RefreshFamilyRecords.
 */
export interface RefreshTokenStore {
  /**
   * Starts a family with its first token (generation 0) and returns true; returns false,
   * storing nothing, when the family already exists (a revoked one among them).
   */
  create(family: RefreshTokenFamily, first: RefreshTokenGeneration): Promise<boolean>;
  /** What the presented token is now, changing nothing: what a grant's checks read. */
  inspect(familyId: string, presented: RefreshTokenGeneration): Promise<RefreshTokenState>;
  /**
   * The one step of a refresh that changes state, atomically (a compare-and-set): while
   * `presented` is the family's current token, makes `successor` current until
   * `family.expiresAt` and keeps `retry`, when given, for the token it replaced: `rotated`.
   * Otherwise changes nothing and answers what it found, except that a `reused` token
   * revokes the family with that verdict, and a `retry` moves the window's end on to
   * `retry.until`, never past the limit the rotation's first answer set. So of concurrent rotations of one token exactly
   * one rotates, and the others find its retry record.
   */
  rotate(
    family: RefreshTokenFamily,
    presented: RefreshTokenGeneration,
    successor: RefreshTokenGeneration,
    retry?: RefreshTokenRetry,
  ): Promise<RefreshTokenRotation>;
  /** Revokes the family: none of its tokens, current or older, refreshes again. */
  revokeFamily(familyId: string): Promise<void>;
  /** Revokes every family issued to the account (password change, deletion). */
  revokeSubject(accountKind: AccountKind, subject: string): Promise<void>;
}

/** What an authorization code stands for. The code itself is never stored, only its digest. */
export interface AuthorizationCodeGrant {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  accountKind: AccountKind;
  subject: string;
  scope: string;
  /** The account's credential stamp at sign-in: the code dies with the account's sessions. */
  credentialStamp: string;
  /**
   * The refresh-token family the code's tokens are issued in, chosen with the code, so that
   * a second presentation of the code revokes them (RFC 6749 §4.1.2).
   */
  familyId: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * The short-lived state of the authorization code flow: the sign-in forms used, then the
 * codes. Each record lives until its `expiresAt`; nothing of it needs to outlive that.
 */
export interface CodeFlowStore {
  /**
   * Remembers a sign-in form's one-time value as used until it expires: true the first
   * time, false ever after (atomically: of concurrent calls with one id, one gets true).
   */
  useOnce(id: string, expiresAt: number): Promise<boolean>;
  saveCode(digest: string, grant: AuthorizationCodeGrant): Promise<void>;
  /** The grant of a code that has not expired, whether it was used or not. */
  findCode(digest: string): Promise<AuthorizationCodeGrant | null>;
  /**
   * Marks the code used by `attempt` (an id of the caller's, new for each presentation),
   * atomically: of concurrent calls exactly one gets `consumed`. Every later call, until
   * that attempt releases the code, gets `reused` and leaves a mark that the code was
   * presented again; an expired or unknown code is `unknown`.
   */
  consumeCode(digest: string, attempt: string): Promise<'consumed' | 'reused' | 'unknown'>;
  /**
   * Makes a code usable again that `attempt` consumed, for an exchange that failed before it
   * answered. A code presented again meanwhile stays used, with its mark, and so does one a
   * later attempt consumed after an earlier release (a release that arrives late undoes
   * nothing of another attempt's).
   */
  releaseCode(digest: string, attempt: string): Promise<void>;
  /**
   * Whether the code was presented again after it was consumed. Asked once its tokens are
   * issued: a replay that raced the issue found no tokens to revoke yet.
   */
  wasReused(digest: string): Promise<boolean>;
}
