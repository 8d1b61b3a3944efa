import { randomUUID } from 'node:crypto';
import { Conflict, ValidationFailed } from '../errors.ts';
import type {
  Account,
  AccountChanges,
  AccountKind,
  AccountQuery,
  AccountStatus,
  AccountStore,
  AdminRole,
  OneTimeTokenStore,
  RefreshTokenStore,
} from '../stores/types.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { assertNewPasswordAcceptable } from './password-policy.ts';
import { createSessions } from './sessions.ts';

/**
 * A stored hash no password verifies against: bcrypt hashes are 60 characters, and a
 * verification of anything else is simply false.
 */
export const UNUSABLE_PASSWORD_HASH = '!';

/** Account ids are UUIDs; anything else cannot name an account. */
export function isAccountId(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

export interface NewAccount {
  identity: string;
  password: string;
  /** Checked when given; admin tools may leave it out. */
  passwordConfirm?: string;
  firstName?: string | null;
  lastName?: string | null;
  status: Exclude<AccountStatus, 'deleted'>;
  roles: AdminRole[];
}

export interface AccountUpdate {
  identity?: string;
  firstName?: string | null;
  lastName?: string | null;
  status?: Exclude<AccountStatus, 'deleted'>;
  roles?: AdminRole[];
  password?: string;
  passwordConfirm?: string;
}

export interface OwnProfileUpdate {
  firstName?: string | null;
  lastName?: string | null;
  currentPassword?: string;
  password?: string;
  passwordConfirm?: string;
}

export type AccountManagement = ReturnType<typeof createAccountManagement>;

/**
 * What administrators and account holders do with the accounts of one store (users or
 * admins). Every change is written through the sessions module, which ends the account's
 * sessions when the change calls for it (a new password or identity, a new status, deletion).
 */
export function createAccountManagement(deps: {
  kind: AccountKind;
  accounts: AccountStore;
  refreshTokens: Pick<RefreshTokenStore, 'revokeSubject'>;
  oneTimeTokens: Pick<OneTimeTokenStore, 'deleteForAccount'>;
  passwords: Pick<PasswordHasher, 'hash' | 'verify'>;
  now?: () => Date;
}) {
  const { kind, accounts, oneTimeTokens, passwords } = deps;
  const now = deps.now ?? (() => new Date());
  const sessions = createSessions({ kind, accounts, refreshTokens: deps.refreshTokens });

  /**
   * The last active superuser can neither go nor lose the role: without one nobody could
   * create or delete administrators. (Two concurrent demotions of the last two superusers can
   * both pass this check; the window is small and an operator can repair it with admin:create.)
   */
  async function assertSuperuserRemains(
    target: Account,
    after: { status: AccountStatus; roles: AdminRole[] },
  ) {
    if (kind !== 'admin') return;
    const isNow = target.status === 'active' && target.roles.includes('superuser');
    const staysOne = after.status === 'active' && after.roles.includes('superuser');
    if (!isNow || staysOne) return;
    if ((await accounts.count({ role: 'superuser', status: 'active' })) <= 1)
      throw new Conflict('The last active superuser cannot be deleted, deactivated or demoted');
  }

  return {
    kind,

    /** The account, deleted ones included (as their anonymised record); null for an id that is not a UUID. */
    async find(id: string): Promise<Account | null> {
      return isAccountId(id) ? accounts.findById(id) : null;
    },

    list(query: AccountQuery): Promise<{ items: Account[]; total: number }> {
      return accounts.list(query);
    },

    /** Throws DuplicateIdentity (409) when the identity is taken. */
    async create(input: NewAccount): Promise<Account> {
      assertNewPasswordAcceptable({ ...input, confirmRequired: false });
      const time = now();
      const account: Account = {
        id: randomUUID(),
        identity: input.identity,
        passwordHash: await passwords.hash(input.password),
        firstName: cleanName(input.firstName) ?? null,
        lastName: cleanName(input.lastName) ?? null,
        status: input.status,
        roles: [...input.roles],
        sessionKey: '',
        createdAt: time,
        updatedAt: time,
      };
      await accounts.create(account);
      return account;
    },

    /** An administrator's change; the caller has checked who may change what. Throws DuplicateIdentity. */
    async update(target: Account, input: AccountUpdate): Promise<Account | null> {
      if (input.passwordConfirm !== undefined && input.password === undefined)
        throw new ValidationFailed({ password: ['Required with passwordConfirm'] });
      const identity = input.identity ?? target.identity;
      if (input.password !== undefined)
        assertNewPasswordAcceptable({
          password: input.password,
          passwordConfirm: input.passwordConfirm,
          identity,
          confirmRequired: false,
        });
      const status = input.status ?? target.status;
      await assertSuperuserRemains(target, { status, roles: input.roles ?? target.roles });
      const changes: AccountChanges = { updatedAt: now() };
      if (input.identity !== undefined) changes.identity = input.identity;
      if (input.firstName !== undefined) changes.firstName = cleanName(input.firstName);
      if (input.lastName !== undefined) changes.lastName = cleanName(input.lastName);
      if (input.status !== undefined) changes.status = input.status;
      if (input.roles !== undefined) changes.roles = [...input.roles];
      if (input.password !== undefined) changes.passwordHash = await passwords.hash(input.password);
      const updated = await sessions.update(target, changes);
      // Links mailed to the old address must not act on the account any more.
      if (updated && input.identity !== undefined && input.identity !== target.identity)
        await oneTimeTokens.deleteForAccount(target.id);
      return updated;
    },

    /**
     * The account holder's own change. A password change needs the current password, the new
     * one twice, and ends every session, the caller's too; a wrong current password is a 400
     * with `errors.currentPassword`.
     */
    async updateOwn(account: Account, input: OwnProfileUpdate): Promise<Account | null> {
      const changes: AccountChanges = { updatedAt: now() };
      if (input.firstName !== undefined) changes.firstName = cleanName(input.firstName);
      if (input.lastName !== undefined) changes.lastName = cleanName(input.lastName);
      const { currentPassword, password, passwordConfirm } = input;
      if (currentPassword === undefined && password === undefined && passwordConfirm === undefined)
        return sessions.update(account, changes);
      const missing: Record<string, string[]> = {};
      if (currentPassword === undefined) missing.currentPassword = ['Required to change the password'];
      if (password === undefined) missing.password = ['Required to change the password'];
      if (passwordConfirm === undefined) missing.passwordConfirm = ['Must repeat the password'];
      if (currentPassword === undefined || password === undefined || Object.keys(missing).length > 0)
        throw new ValidationFailed(missing);
      assertNewPasswordAcceptable({
        password,
        passwordConfirm,
        identity: account.identity,
        confirmRequired: true,
      });
      if (!(await passwords.verify(currentPassword, account.passwordHash)))
        throw new ValidationFailed({ currentPassword: ['Is not the current password'] });
      changes.passwordHash = await passwords.hash(password);
      return sessions.update(account, changes);
    },

    /** Activates a pending or inactive account; an active one stays as it is. */
    async activate(account: Account): Promise<Account | null> {
      const updated =
        account.status === 'active'
          ? account
          : await sessions.update(account, { status: 'active', updatedAt: now() });
      await oneTimeTokens.deleteForAccount(account.id, 'activation');
      return updated;
    },

    /**
     * Deletion keeps an anonymised record: identity `deleted-<id>@invalid` (which frees the
     * real one), no names, no roles, a hash no password matches, status `deleted`; every
     * session of the account ends with it.
     */
    async remove(account: Account): Promise<void> {
      await assertSuperuserRemains(account, { status: 'deleted', roles: [] });
      await sessions.update(account, {
        identity: `deleted-${account.id}@invalid`,
        passwordHash: UNUSABLE_PASSWORD_HASH,
        firstName: null,
        lastName: null,
        roles: [],
        status: 'deleted',
        updatedAt: now(),
      });
      await oneTimeTokens.deleteForAccount(account.id);
    },
  };
}

/** Names are trimmed; an empty one is no name. */
export function cleanName(name: string | null | undefined): string | null | undefined {
  if (name === undefined || name === null) return name;
  return name.trim() || null;
}
