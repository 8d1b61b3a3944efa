import type { Actor } from '../caller.ts';
import { Conflict, DuplicateIdentity, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { isUuid } from '../ids.ts';
import type { RuleLock } from '../rule-lock.ts';
import { cleanName, newAccountRecord } from './account-record.ts';
import { type AvatarStore, FINAL_AVATAR_GENERATION } from './avatar-store.ts';
import {
  type AccountUpdate,
  checkInput,
  checkNewAccount,
  type NewAccount,
  type OwnProfileUpdate,
} from './input.ts';
import { checkAccountListQuery, type ListParameters } from './listing.ts';
import type {
  Account,
  AccountChanges,
  AccountKind,
  AccountStatus,
  AccountStore,
  AdminRole,
  OneTimeTokenStore,
} from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { assertCurrentPassword, assertNewPasswordAcceptable } from './password-policy.ts';
import {
  type AccountOperation,
  assertMay,
  assertMayChange,
  assertMayView,
  ownAccountOf,
} from './permissions.ts';
import { CurrentPasswordBody, OwnProfileBody, UpdateAdminBody, UpdateUserBody } from './schemas.ts';
import type { Sessions } from './sessions.ts';

/**
 * A stored hash no password verifies against: bcrypt hashes are 60 characters, and a
 * verification of anything else is simply false.
 */
const UNUSABLE_PASSWORD_HASH = '!';

/** Account ids are UUIDs; anything else cannot name an account. */
const isAccountId = isUuid;

const UPDATE_BODIES = { user: UpdateUserBody, admin: UpdateAdminBody } as const;

export type AccountManagement = ReturnType<typeof createAccountManagement>;

/**
 * What is done with the accounts of one store (users or admins), by whom. Every operation
 * takes the caller and the raw id it was given, and refuses by itself: 401/403 by
 * the rules of permissions.ts, 404 for an id that names no account, 409, 400. Every change is
 * written through the sessions module, which ends the account's sessions when the change
 * calls for it.
 */
export function createAccountManagement(deps: {
  kind: AccountKind;
  accounts: AccountStore;
  sessions: Pick<Sessions, 'write'>;
  oneTimeTokens: Pick<OneTimeTokenStore, 'deleteForAccount'>;
  passwords: Pick<PasswordHasher, 'hash' | 'verify'>;
  ruleLock: RuleLock;
  /** The avatars of this kind of account, if it has them (users). */
  avatars?: Pick<AvatarStore, 'delete'>;
  now?: () => Date;
}) {
  const { kind, accounts, sessions, oneTimeTokens, passwords, ruleLock, avatars } = deps;
  const now = deps.now ?? (() => new Date());
  const noSuchAccount = () => new NotFound(`No such ${kind}`);

  /** The account an id names, deleted ones (their anonymised record) only when asked for. */
  async function existing(id: string, options: { deleted: boolean }): Promise<Account> {
    const account = isAccountId(id) ? await accounts.findById(id) : null;
    if (!account || (!options.deleted && account.status === 'deleted')) throw noSuchAccount();
    return account;
  }

  /** The actor's own account, for an operation on it. */
  function own(actor: Actor, operation: AccountOperation): Account {
    assertMay(actor, kind, operation);
    const account = ownAccountOf(actor, kind);
    if (!account) throw new Forbidden();
    return account;
  }

  /** Writes the changes; an account that vanished meanwhile is a 404. */
  async function write(account: Account, changes: AccountChanges): Promise<Account> {
    const updated = await sessions.write(kind, account, changes);
    if (!updated) throw noSuchAccount();
    return updated;
  }

  /**
   * The last active superuser can neither go nor lose the role: without one nobody could
   * create or delete administrators. A change that may end one (`after`: the target's status
   * and roles once written) runs in turn with every other such change, on every node, and
   * counts the active superusers as stored now, the target left out: the target as read
   * before, perhaps from a cache, decides nothing. (An admin's own profile changes touch
   * neither status nor roles.)
   */
  function keepingASuperuser<T>(
    target: Account,
    after: { status: AccountStatus; roles: AdminRole[] },
    change: () => Promise<T>,
  ): Promise<T> {
    if (kind !== 'admin') return change();
    const check = async () => {
      if (after.status === 'active' && after.roles.includes('superuser')) return;
      const active = { role: 'superuser', status: 'active' } as const;
      if ((await accounts.count({ ...active, except: target.id })) > 0) return;
      // None besides the target: it is the last one, unless there is none at all to keep.
      if ((await accounts.count(active)) > 0)
        throw new Conflict('The last active superuser cannot be deleted, deactivated or demoted');
    };
    return ruleLock.inTurn('last-active-superuser', check, change);
  }

  /**
   * Deletion keeps an anonymised record: identity `deleted-<id>@invalid` (which frees the
   * real one), no names, no roles, no avatar, a hash no password matches, status `deleted`;
   * every session of the account ends with it.
   *
   * The avatar goes first: should the anonymisation then fail, the account is still there to
   * be deleted again, and a deleted account never keeps an image. It is removed with the last
   * generation of all (FINAL_AVATAR_GENERATION), so no upload still under way stores an image
   * after it, and the flag is written with that generation after the anonymisation, so that
   * an upload's flag written in between is undone and none is accepted later.
   */
  async function erase(account: Account): Promise<void> {
    await avatars?.delete(account.id, FINAL_AVATAR_GENERATION);
    await keepingASuperuser(account, { status: 'deleted', roles: [] }, () =>
      sessions.write(kind, account, {
        identity: `deleted-${account.id}@invalid`,
        passwordHash: UNUSABLE_PASSWORD_HASH,
        firstName: null,
        lastName: null,
        roles: [],
        status: 'deleted',
        hasAvatar: false,
        updatedAt: now(),
      }),
    );
    if (avatars) await accounts.writeAvatarFlag(account.id, FINAL_AVATAR_GENERATION, { hasAvatar: false });
    await oneTimeTokens.deleteForAccount(account.id);
  }

  return {
    /** Any account, deleted ones as their anonymised record; a user reads only their own. */
    async view(actor: Actor, id: string): Promise<Account> {
      assertMay(actor, kind, 'view');
      if (!isAccountId(id)) throw noSuchAccount();
      assertMayView(actor, id);
      // The caller's own account was loaded by authentication a moment ago.
      const mine = ownAccountOf(actor, kind);
      return mine?.id === id ? mine : existing(id, { deleted: true });
    },

    /** One page of the accounts a query asks for (see listing.ts), with the total that match. */
    async list(
      actor: Actor,
      parameters: ListParameters,
    ): Promise<{ items: Account[]; total: number; page: number; limit: number }> {
      assertMay(actor, kind, 'list');
      const query = checkAccountListQuery(kind, parameters);
      const { items, total } = await accounts.list(query);
      return { items, total, page: query.page, limit: query.limit };
    },

    /** Throws DuplicateIdentity (409) when the identity is taken. */
    async create(actor: Actor, given: NewAccount): Promise<Account> {
      assertMay(actor, kind, 'create');
      const input = checkNewAccount(kind, given);
      const account = newAccountRecord(
        {
          identity: input.identity,
          passwordHash: await passwords.hash(input.password),
          firstName: input.firstName,
          lastName: input.lastName,
          status: input.status ?? 'active',
          roles: kind === 'admin' ? (input.roles ?? ['admin']) : [],
        },
        now(),
      );
      await accounts.create(account);
      return account;
    },

    /** An administrator's change of an account that is not deleted. Throws DuplicateIdentity. */
    async update(actor: Actor, id: string, given: AccountUpdate): Promise<Account> {
      assertMay(actor, kind, 'update');
      const input: AccountUpdate = checkInput(UPDATE_BODIES[kind], given);
      const target = await existing(id, { deleted: false });
      assertMayChange(actor, kind, target, input);
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
      const changes: AccountChanges = { updatedAt: now() };
      if (input.identity !== undefined) changes.identity = input.identity;
      if (input.firstName !== undefined) changes.firstName = cleanName(input.firstName);
      if (input.lastName !== undefined) changes.lastName = cleanName(input.lastName);
      if (input.status !== undefined) changes.status = input.status;
      if (input.roles !== undefined) changes.roles = [...input.roles];
      if (input.password !== undefined) changes.passwordHash = await passwords.hash(input.password);
      const after = { status: input.status ?? target.status, roles: input.roles ?? target.roles };
      const moves = identity !== target.identity;
      if (moves) {
        const holder = await accounts.findByIdentity(identity);
        if (holder && holder.id !== target.id) throw new DuplicateIdentity(identity);
      }
      // Links mailed to the old address must not act on the account any more: they die before
      // the write, once every check passed, so that no change of address leaves them alive.
      // One asked for under the old address meanwhile names it and cannot act (mailed-links.ts
      // `actsOn`); the kill after the write removes it, best effort.
      const writing = async () => {
        if (moves) await oneTimeTokens.deleteForAccount(target.id);
        const written = await write(target, changes);
        if (moves && written) await oneTimeTokens.deleteForAccount(target.id).catch(() => undefined);
        return written;
      };
      return input.status === undefined && input.roles === undefined
        ? await writing()
        : await keepingASuperuser(target, after, writing);
    },

    /** Deletes an account that is not deleted yet (see erase). */
    async remove(actor: Actor, id: string): Promise<void> {
      assertMay(actor, kind, 'delete');
      await erase(await existing(id, { deleted: false }));
    },

    /** Activates a pending or inactive account; an active one stays as it is. */
    async activate(actor: Actor, id: string): Promise<Account> {
      assertMay(actor, kind, 'activate');
      const target = await existing(id, { deleted: false });
      const activated =
        target.status === 'active' ? target : await write(target, { status: 'active', updatedAt: now() });
      await oneTimeTokens.deleteForAccount(target.id, 'activation');
      return activated;
    },

    viewOwn(actor: Actor): Account {
      return own(actor, 'view-own');
    },

    /**
     * The account holder's own change. A password change needs the current password, the new
     * one twice, and ends every session, the caller's too; a wrong current password is a 400
     * with `errors.currentPassword`.
     */
    async updateOwn(actor: Actor, given: OwnProfileUpdate): Promise<Account> {
      const account = own(actor, 'update-own');
      const input = checkInput(OwnProfileBody, given);
      const changes: AccountChanges = { updatedAt: now() };
      if (input.firstName !== undefined) changes.firstName = cleanName(input.firstName);
      if (input.lastName !== undefined) changes.lastName = cleanName(input.lastName);
      const { currentPassword, password, passwordConfirm } = input;
      if (currentPassword === undefined && password === undefined && passwordConfirm === undefined)
        return write(account, changes);
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
      await assertCurrentPassword(passwords, account, currentPassword);
      changes.passwordHash = await passwords.hash(password);
      return write(account, changes);
    },

    /**
     * Deletes the caller's own account (see erase). It takes the current password, so that a
     * stolen access token alone cannot destroy the account: a wrong one is refused as on a
     * password change (400, `errors.currentPassword`), and nothing changes.
     */
    async removeOwn(actor: Actor, given: { currentPassword: string }): Promise<void> {
      const account = own(actor, 'delete-own');
      const { currentPassword } = checkInput(CurrentPasswordBody, given);
      await assertCurrentPassword(passwords, account, currentPassword);
      await erase(account);
    },
  };
}
