import { Forbidden, NotFound } from '../errors.ts';
import { type Actor, type Role, requirePermission } from '../identity.ts';
import { isUuid } from '../ids.ts';
import { type AvatarLimits, recogniseAvatar } from './avatar-image.ts';
import { withoutMetadata } from './avatar-metadata.ts';
import type { Avatar, AvatarStore } from './avatar-store.ts';
import type { Account, AccountStore } from './model.ts';
import { ownAccountOf } from './permissions.ts';
import type { Sessions } from './sessions.ts';

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
 * Makes the account's `hasAvatar` say what the avatar store holds; called by every request
 * after its last change to the image. The image and the flag are two writes to two stores,
 * and requests for one account's avatar run at once (an upload and a removal, two uploads, the
 * account's deletion), so the flag is never written from what a request did itself, which
 * another may have undone since (an upload's `true` landing after a removal's `false`, over no
 * image). The store is read, the flag written from it, and the store read again: when the two
 * reads differ, another request changed the image meanwhile, and it is done again.
 *
 * Why that ends in agreement, whatever the interleaving: take the last flag write, by request
 * R, which read the store before it and, once it was written, saw the same. An image change
 * after that second read would be followed by its own request's flag write, later than R's,
 * which is the last; so every change comes before R's second read, which saw the final image,
 * and R wrote that. It terminates: each repetition answers a change another request made.
 *
 * `touched`: the request changed the avatar, so the account's `updatedAt` moves.
 */
export async function settleAvatarFlag(
  deps: { avatars: Pick<AvatarStore, 'has'>; sessions: Pick<Sessions, 'write'>; now: () => Date },
  account: Account,
  touched: boolean,
): Promise<Account | null> {
  for (;;) {
    const stored = await deps.avatars.has(account.id);
    const written = await deps.sessions.write('user', account, {
      hasAvatar: stored,
      ...(touched ? { updatedAt: deps.now() } : {}),
    });
    if (!written || (await deps.avatars.has(account.id)) === stored) return written;
  }
}

/**
 * Users' avatars. The image is the truth and the account's `hasAvatar` follows it: a change
 * writes the image first and then settles the flag (settleAvatarFlag), so a failure between
 * the two leaves at most a link missing (after an upload) or leading to a 404 (after a
 * removal), and the same request sent again completes it. GET always answers what the avatar
 * store holds.
 */
export function createAvatars(deps: {
  users: AccountStore;
  avatars: AvatarStore;
  sessions: Pick<Sessions, 'write'>;
  limits: AvatarLimits;
  now?: () => Date;
}) {
  const { users, avatars, sessions, limits } = deps;
  const now = deps.now ?? (() => new Date());
  const noSuchUser = () => new NotFound('No such user');
  const settle = (account: Account, touched: boolean) =>
    settleAvatarFlag({ avatars, sessions, now }, account, touched);

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
     * account deleted meanwhile keeps no image: its deletion may have removed the avatar
     * before this one was stored, so the image is removed again here and the answer is 404.
     */
    async replace(actor: Actor, owner: AvatarOwner, upload: () => Promise<Uint8Array>): Promise<void> {
      const account = await changedAccount(actor, owner);
      const bytes = await upload();
      const { mediaType } = recogniseAvatar(bytes, limits);
      // Published to whoever may read it: never where or with what it was taken.
      await avatars.put(account.id, { mediaType, bytes: withoutMetadata(bytes, mediaType) });
      const written = await settle(account, true);
      if (written && written.status !== 'deleted') return;
      await avatars.delete(account.id);
      await settle(written ?? account, false);
      throw noSuchUser();
    },

    /** Removes the avatar; having none already is no error (the request may be a retry). */
    async remove(actor: Actor, owner: AvatarOwner): Promise<void> {
      const account = await changedAccount(actor, owner);
      const removed = await avatars.delete(account.id);
      await settle(account, removed || account.hasAvatar);
    },
  };
}
