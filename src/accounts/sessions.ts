import { hash, randomBytes } from 'node:crypto';
import { BoundedMap } from '../bounded-map.ts';
import type { Account, AccountChanges, AccountKind, AccountStore } from './model.ts';
import { identityKey } from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';

/**
 * The sessions of accounts. A session is everything one sign-in issued: its access tokens
 * (claim `cst`) and its refresh-token family (the stamp stored with it) carry the account's
 * credential stamp of that moment. A session is valid while the account is active and still
 * has that stamp; every session of an account ends when a change gives it another one.
 */

/**
 * A short digest of the password hash a sign-in was verified against and of the account's
 * session key at that moment.
 */
export function credentialStamp(account: Pick<Account, 'passwordHash' | 'sessionKey'>): string {
  // Without a key the stamp is the digest of the hash alone, as before keys existed, so
  // tokens issued then stay valid. (Neither a bcrypt hash nor a key has a line break.)
  const input =
    account.sessionKey === '' ? account.passwordHash : `${account.passwordHash}\n${account.sessionKey}`;
  const known = stamps.get(input);
  if (known !== undefined) return known;
  const stamp = hash('sha256', input, 'base64url').slice(0, 22);
  stamps.set(input, stamp);
  return stamp;
}

/**
 * Stamps by what they digest, the oldest forgotten first. Every authenticated request asks
 * for its account's stamp, and a digest costs several times a lookup; the input is what the
 * account store already holds (a password hash, never a password, and the session key).
 */
const stamps = new BoundedMap<string, string>(10_000);

/**
 * Whether writing `changes` ends every session of the account: a new password, another
 * identity (the other half of the credentials, and often changed to take an account back
 * from whoever held the old one), and any change of status. Leaving `active` ends them; so
 * does re-entering it, which no legitimate session can be lost to, since an account that
 * is not active has none.
 */
function endsSessions(account: Account, changes: AccountChanges): boolean {
  return (
    (changes.passwordHash !== undefined && changes.passwordHash !== account.passwordHash) ||
    (changes.identity !== undefined && identityKey(changes.identity) !== identityKey(account.identity)) ||
    (changes.status !== undefined && changes.status !== account.status)
  );
}

export type Sessions = ReturnType<typeof createSessions>;

/**
 * What ending an account's sessions needs of the refresh tokens, declared here so the
 * accounts domain does not reach into the OAuth domain that builds on it: the OAuth refresh
 * token store provides it.
 */
export interface SessionTokens {
  /** Revokes every refresh token family of the account. */
  revokeSubject(accountKind: AccountKind, subject: string): Promise<void>;
}

/**
 * Starts sessions (sign-in), tells whether one is still valid (authentication and the
 * refresh grant alike), and writes every change to an account, ending its sessions when the
 * change calls for it, so no writer can forget to.
 */
export function createSessions(deps: {
  accounts: Readonly<Record<AccountKind, AccountStore>>;
  refreshTokens: SessionTokens;
  passwords: Pick<PasswordHasher, 'verify' | 'verifyNothing'>;
}) {
  const { accounts, refreshTokens, passwords } = deps;
  return {
    /**
     * Signs in with an identity and a password: the account and the stamp its new session
     * carries, or null, the same for every reason (no such account, a wrong password, an
     * account that is not active).
     */
    async start(
      kind: AccountKind,
      identity: string,
      password: string,
    ): Promise<{ account: Account; credentialStamp: string } | null> {
      const account = await accounts[kind].findByIdentity(identity);
      if (!account) {
        // Spend the time a real check takes, so response times do not reveal which identities exist.
        await passwords.verifyNothing(password);
        return null;
      }
      if (!(await passwords.verify(password, account.passwordHash))) return null;
      if (account.status !== 'active') return null;
      return { account, credentialStamp: credentialStamp(account) };
    },

    /** Is the session with this stamp still valid? Its account, or `refuse(detail)` thrown. */
    async resume(
      kind: AccountKind,
      id: string,
      stamp: string | undefined,
      refuse: (detail: string) => Error,
    ): Promise<Account> {
      const account = await accounts[kind].findById(id);
      if (account?.status !== 'active') throw refuse('Account is not active');
      if (stamp !== credentialStamp(account))
        throw refuse(
          "The session has ended: the account's credentials or status changed since the token was issued",
        );
      return account;
    },

    /**
     * Writes the changes to the account (null when it is gone); when they end sessions, every
     * session of the account issued before ends with the write, for good.
     *
     * The race this closes: a sign-in that verified the old credentials while the write
     * happened read the account before it, so its tokens carry the old stamp, and every check
     * compares against the account as it is now. The new session key is random rather than
     * counted, because FerretDB applies concurrent updates of one document without isolation
     * and two writers counting from one value would agree on the next.
     *
     * The account is written first: its new stamp is what ends the sessions, so a failure
     * after it leaves none of them valid. Revoking the refresh families then only frees their
     * storage, and a revocation that fails is not the change's failure (the families expire).
     */
    async write(kind: AccountKind, account: Account, changes: AccountChanges): Promise<Account | null> {
      if (!endsSessions(account, changes)) return accounts[kind].update(account.id, changes);
      const written = await accounts[kind].update(account.id, {
        ...changes,
        sessionKey: randomBytes(16).toString('base64url'),
      });
      await refreshTokens.revokeSubject(kind, account.id).catch(() => undefined);
      return written;
    },
  };
}
