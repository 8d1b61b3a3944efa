import { type Actor, type Role, requirePermission } from '../caller.ts';
import { Forbidden, NotFound } from '../errors.ts';
import { isUuid } from '../ids.ts';
import { type AvatarLimits, createAvatarEncoder } from './avatar-image.ts';
import {
  type Avatar,
  type AvatarGeneration,
  type AvatarStore,
  FINAL_AVATAR_GENERATION,
  nextAvatarGeneration,
} from './avatar-store.ts';
import type { Account, AccountStore } from './model.ts';
import { ownAccountOf } from './permissions.ts';

/**
 * Who may see and change which user's avatar: a user their own (through `my-account` or by
 * their id, which their account's `_links.avatar` names), an administrator any user's.
 * Administrators have no avatar.
 */
export const AVATAR_PERMISSIONS: Readonly<Record<'own' | 'any', readonly Role[]>> = {
  own: ['user'],
  any: ['admin', 'user'],
};

/** Whose avatar: the caller's own, or the user's with this id. */
export type AvatarOwner = 'own' | { id: string };

export type Avatars = ReturnType<typeof createAvatars>;

/**
 * Writes the account's `hasAvatar` after the request's change to the image, as of that
 * change's generation. The image and the flag are two writes to two stores, and requests for
 * one account's avatar run at once (an upload and a removal, two uploads, the account's
 * deletion), so the flag writes may land in another order than the changes did (an upload's
 * `true` after a removal's `false`, over no image). Both stores therefore keep only the latest
 * generation: the avatar store refuses a change older than the one it holds, the account a
 * flag older than the one it reflects. The change stored last is the one of the latest
 * generation, its request's flag write is accepted whenever it lands and every other refused
 * after it, so the two end in agreement; and each request does a fixed number of operations,
 * however many others run.
 *
 * Then one look at both, and at most one more write: FerretDB 1.x finds the document an
 * update's filter matches and writes it afterwards, not isolated from other writers, so an
 * older flag (and generation) that matched before this write may land after it. The request
 * whose stale write that was sees the account disagree with the latest change and writes the
 * latest change's flag, as of its generation. (On MongoDB and in memory the filter and the
 * write are one step, and the look finds at most a later change whose own request has not
 * written its flag yet, which the same write does for it.) A later stale write still, landing
 * after that look, is left to the next change: the window is one round trip wide.
 *
 * A change the avatar store refused writes no flag: the request of the later change writes
 * its own. `touched`: the request changed the avatar, so the account's `updatedAt` moves.
 */
export async function writeAvatarFlag(
  deps: {
    users: Pick<AccountStore, 'writeAvatarFlag' | 'findById'>;
    avatars: Pick<AvatarStore, 'latestChange'>;
    now: () => Date;
  },
  account: Account,
  generation: AvatarGeneration,
  hasAvatar: boolean,
  touched: boolean,
): Promise<Account | null> {
  const { users, avatars, now } = deps;
  const written = await users.writeAvatarFlag(account.id, generation, {
    hasAvatar,
    ...(touched ? { updatedAt: now() } : {}),
  });
  if (!written) return null;
  const [latest, current] = await Promise.all([avatars.latestChange(account.id), users.findById(account.id)]);
  if (!latest || !current || current.hasAvatar === latest.present) return current ?? written;
  return users.writeAvatarFlag(account.id, latest.generation, { hasAvatar: latest.present });
}

/**
 * Users' avatars. The image is the truth and the account's `hasAvatar` follows it: a change
 * writes the image first and then the flag (writeAvatarFlag), so a failure between the two
 * leaves at most a link missing (after an upload) or leading to a 404 (after a removal), and
 * the same request sent again completes it. GET always answers what the avatar store holds.
 */
export function createAvatars(deps: {
  users: AccountStore;
  avatars: AvatarStore;
  limits: AvatarLimits;
  now?: () => Date;
}) {
  const { users, avatars, limits } = deps;
  const encode = createAvatarEncoder(limits);
  const now = deps.now ?? (() => new Date());
  const noSuchUser = () => new NotFound('No such user');
  const flag = (account: Account, generation: AvatarGeneration, hasAvatar: boolean, touched: boolean) =>
    writeAvatarFlag({ users, avatars, now }, account, generation, hasAvatar, touched);

  /** The owner's account id, refused by the rules above before anything is read. */
  function ownerId(actor: Actor, owner: AvatarOwner): string {
    if (owner === 'own') return ownAccount(actor).id;
    requirePermission(actor, AVATAR_PERMISSIONS.any);
    // Before the lookup, so a user cannot probe which ids exist.
    if (actor.role === 'user' && actor.account.id !== owner.id)
      throw new Forbidden('Users may only see and change their own avatar');
    if (!isUuid(owner.id)) throw noSuchUser();
    return owner.id;
  }

  function ownAccount(actor: Actor): Account {
    requirePermission(actor, AVATAR_PERMISSIONS.own);
    const account = ownAccountOf(actor, 'user');
    if (!account) throw new Forbidden();
    return account;
  }

  /** The user an avatar change is for: one that exists and is not deleted. */
  async function changedAccount(actor: Actor, owner: AvatarOwner): Promise<Account> {
    const id = ownerId(actor, owner);
    // The caller's own account was loaded by authentication a moment ago.
    const mine = ownAccountOf(actor, 'user');
    const account = mine?.id === id ? mine : await users.findById(id);
    if (!account || account.status === 'deleted') throw noSuchUser();
    return account;
  }

  /**
   * A change the avatar store refused, a later one being stored: done, and then overtaken,
   * unless that later change was the account's deletion.
   */
  async function overtaken(account: Account): Promise<void> {
    const current = await users.findById(account.id);
    if (!current || current.status === 'deleted') throw noSuchUser();
  }

  return {
    limits,

    /** The stored image; 404 when the user has none (or there is no such user). */
    async view(actor: Actor, owner: AvatarOwner): Promise<Avatar> {
      const avatar = await avatars.find(ownerId(actor, owner));
      if (!avatar) throw new NotFound('No avatar');
      return avatar;
    },

    /**
     * Sets the avatar from what `upload` reads, once the caller may and the user exists. An
     * upload overtaken by a later change (another upload, a removal) is answered as done: it
     * was, and then replaced. An account deleted meanwhile keeps no image: its deletion
     * removes the avatar with the last generation of all (FINAL_AVATAR_GENERATION), so this
     * image was either refused or is removed by it, and the answer is 404.
     */
    async replace(actor: Actor, owner: AvatarOwner, upload: () => Promise<Uint8Array>): Promise<void> {
      const account = await changedAccount(actor, owner);
      // Published to whoever may read it: its pixels, never where or with what it was taken.
      const avatar = await encode(await upload());
      const generation = nextAvatarGeneration(now());
      const stored = await avatars.put(account.id, avatar, generation);
      if (!stored) return overtaken(account);
      const written = await flag(account, generation, true, true);
      if (written && written.status !== 'deleted') return;
      // Gone altogether, no deletion removed the image: nobody else will.
      if (!written) await avatars.delete(account.id, FINAL_AVATAR_GENERATION);
      throw noSuchUser();
    },

    /** Removes the avatar; having none already is no error (the request may be a retry). */
    async remove(actor: Actor, owner: AvatarOwner): Promise<void> {
      const account = await changedAccount(actor, owner);
      const generation = nextAvatarGeneration(now());
      const removal = await avatars.delete(account.id, generation);
      if (removal === 'superseded') return overtaken(account);
      await flag(account, generation, false, removal === 'removed' || account.hasAvatar);
    },
  };
}
