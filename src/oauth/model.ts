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
 * A family's one live token, as the store knows it: which rotation it is and the MAC it
 * carries. A token of an older generation is recognised by its number alone, so a family is
 * one record however often it rotates.
 */
export interface RefreshTokenGeneration {
  generation: number;
  mac: string;
}

/** A rotation a failed refresh tried: the successor it installed, and the token it replaced. */
export interface RefreshTokenRotation {
  successorMac: string;
  previousMac: string;
}

/**
 * A family's life: its current token is unused → consumed (a refresh holds it for a short
 * lease) → rotated (the successor is current). Telling a consumed token from an older
 * generation is what lets a double submit fail quietly while a replay of a rotated token,
 * which means it leaked, revokes the family.
 */
export type ConsumeResult =
  | { outcome: 'consumed'; grant: RefreshTokenGrant }
  /** Held by another refresh whose lease has not run out: a concurrent duplicate. */
  | { outcome: 'in-flight' }
  /** An older generation: the store has revoked the family, atomically with the verdict. */
  | { outcome: 'reused'; grant: RefreshTokenGrant }
  | { outcome: 'revoked' }
  | { outcome: 'unknown' };

export interface RefreshTokenStore {
  /**
   * Starts a family with its first token (generation 0) and returns true; returns false,
   * storing nothing, when the family already exists (a revoked one among them).
   */
  create(grant: RefreshTokenGrant, first: RefreshTokenGeneration): Promise<boolean>;
  /**
   * Presents a token whose MAC the caller has verified, atomically: of concurrent calls
   * exactly one gets `consumed` and holds the family for `attempt` until `leaseUntil`
   * (epoch ms); the others get `in-flight`. After the lease anyone may consume it again, so
   * a refresh that never completes strands nothing. An older generation is `reused`.
   */
  consume(
    familyId: string,
    presented: RefreshTokenGeneration,
    hold: { attempt: string; leaseUntil: number },
  ): Promise<ConsumeResult>;
  /**
   * Makes `successor` the family's unused current token until `grant.expiresAt` (the grant
   * `consume` returned, with its new expiry), only while `attempt` still holds the family;
   * false otherwise (revoked, or the lease was taken over).
   */
  rotate(grant: RefreshTokenGrant, attempt: string, successor: RefreshTokenGeneration): Promise<boolean>;
  /**
   * Undoes what a failed refresh did: a token `attempt` still holds becomes unused; the
   * `rotation` that installed `successorMac`, while nobody has used that successor yet (its
   * reply was lost), is rolled back to the previous generation and `previousMac` (keeping
   * the new expiry), so the client's retry with the token it still holds succeeds.
   * Anything else stays.
   */
  release(familyId: string, attempt: string, rotation?: RefreshTokenRotation): Promise<void>;
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
   * Marks the code used, atomically: of concurrent calls exactly one gets `consumed`. Every
   * later call gets `reused` and leaves a mark that the code was presented again; an expired
   * or unknown code is `unknown`.
   */
  consumeCode(digest: string): Promise<'consumed' | 'reused' | 'unknown'>;
  /**
   * Whether the code was presented again after it was consumed. Asked once its tokens are
   * issued: a replay that raced the issue found no tokens to revoke yet.
   */
  wasReused(digest: string): Promise<boolean>;
}
