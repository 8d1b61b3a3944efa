/**
 * Single-use, expiring hashes mailed to account holders (activation and password reset links).
 * Only a SHA-256 digest of each hash is stored: whoever reads the store cannot use the links.
 */

export type OneTimeTokenPurpose = 'activation' | 'reset';

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
