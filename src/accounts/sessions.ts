import { randomBytes } from 'node:crypto';
import { credentialStamp } from '../oauth/credential-stamp.ts';
import { identityKey } from '../stores/account-rules.ts';
import type {
  Account,
  AccountChanges,
  AccountKind,
  AccountStore,
  RefreshTokenStore,
} from '../stores/types.ts';

/**
 * The sessions of accounts. A session is everything one login issued: its access tokens
 * (claim `cst`) and its refresh-token family (the stamp stored with it) carry the account's
 * credential stamp of that moment, a digest of its password hash and session key. A session
 * is valid while the account is active and still has that stamp. Ending every session of an
 * account gives it a new random session key, which no later change brings back. (Random
 * rather than a counter: FerretDB applies concurrent updates of one document without
 * isolation, and two writers that both counted from one value would agree on the next.)
 */

/** Is this session still valid? Throws `refuse(detail)` when it is not. */
export function assertSessionValid(
  account: Account | null,
  stamp: string | undefined,
  refuse: (detail: string) => Error,
): asserts account is Account {
  if (account?.status !== 'active') throw refuse('Account is not active');
  if (stamp !== credentialStamp(account))
    throw refuse(
      "The session has ended: the account's credentials or status changed since the token was issued",
    );
}

/**
 * Whether writing `changes` ends every session of the account: a new password, another
 * identity (the other half of the credentials, and often changed to take an account back
 * from whoever held the old one), and any change of status. Leaving `active` ends them; so
 * does re-entering it, which no legitimate session can be lost to, since an account that
 * is not active has none.
 */
export function endsSessions(account: Account, changes: AccountChanges): boolean {
  return (
    (changes.passwordHash !== undefined && changes.passwordHash !== account.passwordHash) ||
    (changes.identity !== undefined && identityKey(changes.identity) !== identityKey(account.identity)) ||
    (changes.status !== undefined && changes.status !== account.status)
  );
}

export type Sessions = ReturnType<typeof createSessions>;

/** Every write to the accounts of one store goes through here, so none can forget to end sessions. */
export function createSessions(deps: {
  kind: AccountKind;
  accounts: Pick<AccountStore, 'update'>;
  refreshTokens: Pick<RefreshTokenStore, 'revokeSubject'>;
}) {
  const { kind, accounts, refreshTokens } = deps;
  return {
    /**
     * Writes the changes to the account; when they end sessions, every session of the
     * account issued before ends with the write, for good.
     *
     * The race this closes: a login that verified the old credentials while the write
     * happened read the account before it, so its tokens carry the old stamp, and every
     * check compares against the account as it is now. The stamp alone ends the sessions;
     * revoking the refresh families only frees their storage, and is done first so that a
     * failure leaves the account unchanged and the request can simply be retried.
     */
    async update(account: Account, changes: AccountChanges): Promise<Account | null> {
      if (!endsSessions(account, changes)) return accounts.update(account.id, changes);
      await refreshTokens.revokeSubject(kind, account.id);
      return accounts.update(account.id, { ...changes, sessionKey: randomBytes(16).toString('base64url') });
    },
  };
}
