import type {
  Avatar,
  AvatarChange,
  AvatarGeneration,
  AvatarRemoval,
  AvatarStore,
} from '../../accounts/avatar-store.ts';

/** What is stored for an account: its image, or after a removal none, and the change's generation. */
interface Stored {
  avatar: Avatar | null;
  generation: AvatarGeneration;
}

/** Avatars in process memory: the embedded mode's. Each holds a copy of what it was given. */
export class MemoryAvatarStore implements AvatarStore {
  readonly #byAccount = new Map<string, Stored>();

  async find(accountId: string): Promise<Avatar | null> {
    const avatar = this.#byAccount.get(accountId)?.avatar;
    return avatar ? copy(avatar) : null;
  }

  async latestChange(accountId: string): Promise<AvatarChange | null> {
    const stored = this.#byAccount.get(accountId);
    return stored ? { generation: stored.generation, present: stored.avatar !== null } : null;
  }

  async put(accountId: string, avatar: Avatar, generation: AvatarGeneration): Promise<boolean> {
    if (!this.#isLater(accountId, generation)) return false;
    this.#byAccount.set(accountId, { avatar: copy(avatar), generation });
    return true;
  }

  async delete(accountId: string, generation: AvatarGeneration): Promise<AvatarRemoval> {
    if (!this.#isLater(accountId, generation)) return 'superseded';
    const had = Boolean(this.#byAccount.get(accountId)?.avatar);
    this.#byAccount.set(accountId, { avatar: null, generation });
    return had ? 'removed' : 'absent';
  }

  #isLater(accountId: string, generation: AvatarGeneration): boolean {
    const stored = this.#byAccount.get(accountId);
    return stored === undefined || stored.generation < generation;
  }
}

function copy(avatar: Avatar): Avatar {
  return { mediaType: avatar.mediaType, bytes: new Uint8Array(avatar.bytes) };
}
