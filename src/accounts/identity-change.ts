import type { Actor } from '../caller.ts';
import { DuplicateIdentity, Forbidden, ValidationFailed } from '../errors.ts';
import type { Mailer } from '../mail/mailer.ts';
import { addressInUseMessage, identityChangeMessage, identityChangeNoticeMessage } from '../mail/messages.ts';
import { checkInput } from './input.ts';
import type { MailedLinks } from './mailed-links.ts';
import type { Account, AccountChanges, AccountStore, OneTimeToken, OneTimeTokenStore } from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { assertCurrentPassword } from './password-policy.ts';
import { assertMay, ownAccountOf } from './permissions.ts';
import { CurrentPasswordBody, IdentityChangeBody } from './schemas.ts';

/**
 * Wrong passwords a change of address link takes: the one that reaches this voids it. The
 * link goes to whatever address was typed, so its receiver may be a stranger; this bounds
 * their guesses at the account's password, whatever the rate (docs/security.md).
 */
export const WRONG_PASSWORDS_PER_LINK = 5;

/**
 * A user's change of address (their identity), verified: the request mails a single-use link
 * to the new address and a notice to the old one, and nothing changes until the link is used
 * with the account's password. docs/security.md says why each step is as it is.
 */
export function createIdentityChange(deps: {
  users: AccountStore;
  oneTimeTokens: Pick<OneTimeTokenStore, 'deleteForAccount'>;
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
     * address cannot take the account over with it, and gets WRONG_PASSWORDS_PER_LINK tries
     * at its password through it, after which the link is void.
     *
     * The link is taken before anything is checked, so the uses of one link run one at a time
     * (a use meanwhile gets 404, as for a used link): each wrong password is counted, and of
     * concurrent uses one wins. It is put back when this use fails on anything but the link
     * itself: a wrong password (400, counted), an address taken meanwhile (409), or a write
     * that failed (the same link works on retry). 404 when the link is no good, or its account
     * is no longer active. Every other link mailed for the account dies before the account is
     * written (a use of one of them that is under way cannot put it back alive), and again
     * after it (best effort: those mailed meanwhile to the old address cannot act anyway), and
     * every session of the account ends (a new identity does, sessions.ts).
     */
    async confirmIdentityChange(hash: string, given: { currentPassword: string }): Promise<Account> {
      const { currentPassword } = checkInput(CurrentPasswordBody, given);
      const { token, invalid } = await links.token('identity-change', hash, 'consume');
      /** What goes back into the store if this use fails: nothing once the link is void. */
      let back: OneTimeToken | null = token;
      try {
        const account = await users.findById(token.accountId);
        const newIdentity = token.newIdentity;
        if (account?.status !== 'active' || newIdentity === undefined) {
          back = null;
          throw invalid;
        }
        if (!(await passwords.verify(currentPassword, account.passwordHash))) {
          const wrongPasswords = (token.wrongPasswords ?? 0) + 1;
          back = wrongPasswords < WRONG_PASSWORDS_PER_LINK ? { ...token, wrongPasswords } : null;
          throw new ValidationFailed({ currentPassword: ['Is not the current password'] });
        }
        if (await heldByAnother(newIdentity, account)) throw new DuplicateIdentity(newIdentity);
        // Every other link dies before the account moves, so no move leaves links mailed to
        // the old address alive; this one alone comes back, in the new generation, should the
        // write fail. A link asked for under the old address meanwhile is saved in that
        // generation: it names the old address, so it cannot act (mailed-links.ts `actsOn`),
        // and the kill after the write removes it.
        const generation = await oneTimeTokens.deleteForAccount(account.id);
        back = { ...token, generation };
        const moved = await deps.write(account, { identity: newIdentity, updatedAt: deps.now() });
        back = null;
        if (!moved) throw invalid;
        await oneTimeTokens.deleteForAccount(account.id).catch(() => undefined);
        return moved;
      } catch (error) {
        if (back) await links.putBack(back);
        throw error;
      }
    },
  };
}
