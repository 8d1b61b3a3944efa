import type { Avatar, AvatarStore } from '../../accounts/avatar-store.ts';

/** Avatars in process memory: the embedded mode's. Each holds a copy of what it was given. */
export class MemoryAvatarStore implements AvatarStore {
  readonly #byAccount = new Map<string, Avatar>();

  async find(accountId: string): Promise<Avatar | null> {
    const avatar = this.#byAccount.get(accountId);
    return avatar ? copy(avatar) : null;
  }

  async has(accountId: string): Promise<boolean> {
    return this.#byAccount.has(accountId);
  }

  async put(accountId: string, avatar: Avatar): Promise<void> {
    this.#byAccount.set(accountId, copy(avatar));
  }

  async delete(accountId: string): Promise<boolean> {
    return this.#byAccount.delete(accountId);
  }
}

function copy(avatar: Avatar): Avatar {
  return { mediaType: avatar.mediaType, bytes: new Uint8Array(avatar.bytes) };
}
