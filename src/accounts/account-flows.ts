import { ServiceUnavailable, ValidationFailed } from '../errors.ts';
import type { Mailer } from '../mail/mailer.ts';
import { activationMessage, identityReminderMessage, passwordResetMessage } from '../mail/messages.ts';
import { cleanName, newAccountRecord } from './account-record.ts';
import { createIdentityChange } from './identity-change.ts';
import { checkInput } from './input.ts';
import { createMailedLinks } from './mailed-links.ts';
import type {
  Account,
  AccountChanges,
  AccountStatus,
  AccountStore,
  OneTimeToken,
  OneTimeTokenPurpose,
  OneTimeTokenStore,
} from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { assertNewPasswordAcceptable } from './password-policy.ts';
import { ActivationBody, EmailBody, PasswordResetBody, RegisterBody, type RegisterInput } from './schemas.ts';
import type { Sessions } from './sessions.ts';

export interface AccountFlowsOptions {
  users: AccountStore;
  sessions: Pick<Sessions, 'write'>;
  oneTimeTokens: OneTimeTokenStore;
  passwords: Pick<PasswordHasher, 'hash' | 'verify'>;
  mailer: Mailer;
  appName: string;
  /** ACCOUNT_PAGES_URL: mail links are `{linkBase}/<activate|reset-password|change-identity>/{hash}`. */
  linkBase: string;
  /** Seconds an activation link stays valid. */
  activationTtl: number;
  /** Seconds a password reset link stays valid. */
  resetTtl: number;
  now?: () => Date;
}

export type AccountFlows = ReturnType<typeof createAccountFlows>;

/** The address a mail request names, as `{email}` is checked. */
const checkedEmail = (email: string): string => checkInput(EmailBody, { email }).email;

/** The status of the account each kind of link acts on. */
const LINK_ACCOUNT_STATUS: Record<OneTimeTokenPurpose, AccountStatus> = {
  activation: 'pending',
  reset: 'active',
  'identity-change': 'active',
};

/** Seconds a change of address link stays valid: as long as a reset link by default, time to open a mailbox. */
const IDENTITY_CHANGE_TTL = 3600;

/**
 * The self-service flows of user accounts: registration and activation, the identity
 * reminder, the password reset and the change of address. Mail goes out inside the request;
 * when it cannot be sent (503) everything the request prepared is undone first, so the same
 * request can be retried: a registration leaves no account, a reset request no usable link.
 */
export function createAccountFlows(options: AccountFlowsOptions) {
  const { users, oneTimeTokens, passwords, mailer } = options;
  const now = options.now ?? (() => new Date());
  const write = (account: Account, changes: AccountChanges) =>
    options.sessions.write('user', account, changes);
  const links = createMailedLinks({
    oneTimeTokens,
    mailer,
    linkBase: options.linkBase,
    ttl: {
      activation: options.activationTtl,
      reset: options.resetTtl,
      'identity-change': IDENTITY_CHANGE_TTL,
    },
    now,
  });

  const sendActivation = (account: Account) =>
    links.mail('activation', account, (link, hash) => [
      activationMessage({
        appName: options.appName,
        to: account,
        link,
        hash,
        validForSeconds: links.ttl.activation,
      }),
    ]);

  /**
   * The reads and write a used link pays for: should they fail, the link goes back, so that
   * the same link works when its holder tries again (a link is consumed before the write so
   * that of concurrent uses only one writes). One whose account's links were killed meanwhile
   * stays dead.
   */
  async function writeOrPutBack<T>(token: OneTimeToken, writing: () => Promise<T>): Promise<T> {
    try {
      return await writing();
    } catch (error) {
      await links.putBack(token);
      throw error;
    }
  }

  /** A new registration of a still-pending address: it replaces the old one, links included. */
  async function replaceRegistration(
    pending: Account,
    registration: Pick<Account, 'passwordHash' | 'firstName' | 'lastName' | 'updatedAt'>,
  ): Promise<Account> {
    const replaced = await write(pending, registration);
    if (!replaced) throw new ServiceUnavailable('The registration changed meanwhile; try again');
    await oneTimeTokens.deleteForAccount(pending.id, 'activation');
    try {
      await sendActivation(replaced);
    } catch (error) {
      const { passwordHash, firstName, lastName, updatedAt } = pending;
      await write(replaced, { passwordHash, firstName, lastName, updatedAt }).catch(() => undefined);
      throw error;
    }
    return replaced;
  }

  return {
    ...createIdentityChange({
      users,
      oneTimeTokens,
      passwords,
      mailer,
      links,
      write,
      appName: options.appName,
      now,
    }),

    /**
     * Creates a pending user and mails the activation link. Registering an address that is
     * still pending replaces that registration (password, names; earlier links die), so
     * nobody can squat an address they cannot receive mail at. Throws DuplicateIdentity (409)
     * when an activated account has the address. When the mail fails, nothing of this
     * registration remains (503).
     */
    async register(given: RegisterInput): Promise<Account> {
      const input = checkInput(RegisterBody, given);
      assertNewPasswordAcceptable({ ...input, confirmRequired: true });
      const time = now();
      const registration = {
        passwordHash: await passwords.hash(input.password),
        firstName: cleanName(input.firstName) ?? null,
        lastName: cleanName(input.lastName) ?? null,
        updatedAt: time,
      };
      const pending = await users.findByIdentity(input.identity);
      if (pending?.status === 'pending') return replaceRegistration(pending, registration);
      const account = newAccountRecord(
        { identity: input.identity, ...registration, status: 'pending', roles: [] },
        time,
      );
      await users.create(account);
      try {
        await sendActivation(account);
      } catch (error) {
        await users.delete(account.id).catch(() => undefined);
        throw error;
      }
      return account;
    },

    /** Mails a new activation link if the address belongs to a pending account; otherwise nothing. */
    async resendActivation(email: string): Promise<void> {
      const account = await users.findByIdentity(checkedEmail(email));
      if (account?.status === 'pending') await sendActivation(account);
    },

    /**
     * Activates the account of the link. The link proves the mailbox, the password proves the
     * registrant: both are needed, so an address registered by someone else cannot be taken
     * over by its owner clicking the link (nor the other way round). 404 when the link is no
     * good or was mailed to an address the account no longer has; a wrong password leaves the
     * link usable, and so does a read or write that fails.
     */
    async activate(hash: string, password: string): Promise<Account> {
      checkInput(ActivationBody, { password });
      const { token: found, invalid } = await links.token('activation', hash, 'find');
      const registered = await users.findById(found.accountId);
      if (registered?.status !== 'pending' || !links.actsOn(found, registered)) throw invalid;
      if (!(await passwords.verify(password, registered.passwordHash))) {
        throw new ValidationFailed({ password: ['Does not match the password chosen at registration'] });
      }
      const { token } = await links.token('activation', hash, 'consume');
      const activated = await writeOrPutBack(token, async () => {
        const account = await users.findById(token.accountId);
        if (
          account?.status !== 'pending' ||
          account.passwordHash !== registered.passwordHash ||
          !links.actsOn(token, account)
        )
          return null;
        return write(account, { status: 'active', updatedAt: now() });
      });
      if (!activated) throw invalid;
      await oneTimeTokens.deleteForAccount(activated.id, 'activation');
      return activated;
    },

    /** Mails the account's identity to the address, if an account has it; otherwise nothing. */
    async recoverIdentity(email: string): Promise<void> {
      const account = await users.findByIdentity(checkedEmail(email));
      if (!account || account.status === 'deleted') return;
      await mailer.send(identityReminderMessage({ appName: options.appName, to: account }));
    },

    /** Mails a reset link if the address belongs to an active account; otherwise nothing. */
    async requestPasswordReset(email: string): Promise<void> {
      const account = await users.findByIdentity(checkedEmail(email));
      if (account?.status !== 'active') return;
      await links.mail('reset', account, (link, hash) => [
        passwordResetMessage({
          appName: options.appName,
          to: account,
          link,
          hash,
          validForSeconds: links.ttl.reset,
        }),
      ]);
    },

    /**
     * When a mailed link expires; 404 when it is not (or no longer) usable: unknown, used,
     * expired, or its account is not in the state the link acts on. Nothing is used up.
     */
    async checkLink(purpose: OneTimeTokenPurpose, hash: string): Promise<{ expiresAt: Date }> {
      const { token, invalid } = await links.token(purpose, hash, 'find');
      const account = await users.findById(token.accountId);
      if (account?.status !== LINK_ACCOUNT_STATUS[purpose] || !links.actsOn(token, account)) throw invalid;
      return { expiresAt: token.expiresAt };
    },

    /**
     * Sets the new password through a reset link, once: the link is consumed atomically only
     * after the new password passed every check, so a rejected password does not burn it, and
     * put back should the write then fail, so the same link works on retry. 404 when the link
     * was mailed to an address the account no longer has. Every session of the account ends,
     * and its other reset links are forgotten.
     */
    async resetPassword(hash: string, given: { password: string; passwordConfirm: string }): Promise<void> {
      const input = checkInput(PasswordResetBody, given);
      const { token, invalid } = await links.token('reset', hash, 'find');
      const account = await users.findById(token.accountId);
      if (account?.status !== 'active' || !links.actsOn(token, account)) throw invalid;
      assertNewPasswordAcceptable({ ...input, identity: account.identity, confirmRequired: true });
      const passwordHash = await passwords.hash(input.password);
      const { token: taken } = await links.token('reset', hash, 'consume');
      // Read again once the link is taken: the account may have moved to another address since
      // the checks (the move kills the link too, but that kill is best effort).
      const reset = await writeOrPutBack(taken, async () => {
        const current = await users.findById(taken.accountId);
        if (current?.status !== 'active' || !links.actsOn(taken, current)) return null;
        return write(current, { passwordHash, updatedAt: now() });
      });
      if (!reset) throw invalid;
      await oneTimeTokens.deleteForAccount(account.id, 'reset');
    },
  };
}
