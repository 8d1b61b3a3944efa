import { DuplicateIdentity, Forbidden, ValidationFailed } from '../errors.ts';
import type { Actor } from '../identity.ts';
import type { Mailer } from '../mail/mailer.ts';
import { addressInUseMessage, identityChangeMessage, identityChangeNoticeMessage } from '../mail/messages.ts';
import { checkInput } from './input.ts';
import type { MailedLinks } from './mailed-links.ts';
import type { Account, AccountChanges, AccountStore, OneTimeTokenStore } from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { assertCurrentPassword } from './password-policy.ts';
import { assertMay, ownAccountOf } from './permissions.ts';
import { CurrentPasswordBody, IdentityChangeBody } from './schemas.ts';

/**
 * A user's change of address (their identity), verified: the request mails a single-use link
 * to the new address and a notice to the old one, and nothing changes until the link is used
 * with the account's password. docs/security.md says why each step is as it is.
 */
export function createIdentityChange(deps: {
  users: AccountStore;
  oneTimeTokens: Pick<OneTimeTokenStore, 'save' | 'deleteForAccount'>;
  passwords: Pick<PasswordHasher, 'verify'>;
  mailer: Mailer;
  links: MailedLinks;
  /** Writes through the sessions module: a new identity ends every session of the account. */
  write(account: Account, changes: AccountChanges): Promise<Account | null>;
  appName: string;
  now: () => Date;
}) {
  const { users, oneTimeTokens, passwords, mailer, links, appName } = deps;
  const validForSeconds = links.ttl['identity-change'];

  /** Another account holding the address (any status but deleted: deletion frees it). */
  async function heldByAnother(identity: string, account: Account): Promise<boolean> {
    const holder = await users.findByIdentity(identity);
    return holder !== null && holder.id !== account.id;
  }

  return {
    /**
     * The signed-in user asks to move their account to another address, with their current
     * password. The answer is the same whether or not the address is free, and so is the
     * notice the old address gets; the new address gets the link when it is free, and a
     * message saying it already has an account when it is not. Each path checks the password
     * and sends two messages. A message that cannot be sent leaves no usable link (503).
     */
    async requestIdentityChange(actor: Actor, given: { identity: string; currentPassword: string }) {
      assertMay(actor, 'user', 'change-identity-own');
      const account = ownAccountOf(actor, 'user');
      if (!account) throw new Forbidden();
      const { identity, currentPassword } = checkInput(IdentityChangeBody, given);
      if (identity === account.identity)
        throw new ValidationFailed({ identity: ['Is already the address of this account'] });
      await assertCurrentPassword(passwords, account, currentPassword);
      const notice = identityChangeNoticeMessage({
        appName,
        to: account,
        newIdentity: identity,
        validForSeconds,
      });
      if (await heldByAnother(identity, account)) {
        await mailer.send(addressInUseMessage({ appName, to: identity }));
        await mailer.send(notice);
        return;
      }
      const to = { ...account, identity };
      await links.mail(
        'identity-change',
        account,
        (link, hash) => [identityChangeMessage({ appName, to, link, hash, validForSeconds }), notice],
        identity,
      );
    },

    /**
     * Moves the account to the address of the link, once. The link proves the new mailbox, the
     * password proves the account holder: a stranger who receives a link for a mistyped
     * address cannot take the account over with it. Everything is checked before the link is
     * used, so a wrong password (400) or an address taken meanwhile (409) leaves it usable;
     * 404 when the link is no good. Every other link mailed for the account dies with it, and
     * every session of the account ends (a new identity does, sessions.ts).
     */
    async confirmIdentityChange(hash: string, given: { currentPassword: string }): Promise<Account> {
      const { currentPassword } = checkInput(CurrentPasswordBody, given);
      const { token: found, invalid } = await links.token('identity-change', hash, 'find');
      const account = await users.findById(found.accountId);
      const newIdentity = found.newIdentity;
      if (account?.status !== 'active' || newIdentity === undefined) throw invalid;
      await assertCurrentPassword(passwords, account, currentPassword);
      if (await heldByAnother(newIdentity, account)) throw new DuplicateIdentity(newIdentity);

      const { token } = await links.token('identity-change', hash, 'consume');
      const current = await users.findById(account.id);
      // A password change or a deactivation since the check: the link dies with the old state.
      if (current?.status !== 'active' || current.passwordHash !== account.passwordHash) throw invalid;
      let moved: Account | null;
      try {
        moved = await deps.write(current, { identity: newIdentity, updatedAt: deps.now() });
      } catch (error) {
        // Taken between the check and the write: as after the check's 409, the link stays usable.
        if (error instanceof DuplicateIdentity) await oneTimeTokens.save(token).catch(() => undefined);
        throw error;
      }
      if (!moved) throw invalid;
      await oneTimeTokens.deleteForAccount(account.id);
      return moved;
    },
  };
}
