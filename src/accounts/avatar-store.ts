/**
 * A user's avatar as the accounts domain keeps it, and the store it needs for that. Every
 * backend implements the store (src/stores/), chosen only by its URL: one that every node of
 * the service reads, since any of them may be asked for the image.
 */

/** The image formats an avatar may be in, by the media type it is served with. */
export const AVATAR_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const;
export type AvatarMediaType = (typeof AVATAR_MEDIA_TYPES)[number];

export interface Avatar {
  /** What the image's bytes were recognised as; never what the client declared. */
  mediaType: AvatarMediaType;
  bytes: Uint8Array;
}

/**
 * One avatar per account, under the account's id. The account record says whether it has
 * one (`hasAvatar`), for the links of its representation; this store is what is served.
 */
export interface AvatarStore {
  /** The account's avatar, or null. */
  find(accountId: string): Promise<Avatar | null>;
  /** Whether the account has an avatar, without reading the image. */
  has(accountId: string): Promise<boolean>;
  /** Stores the account's avatar, replacing the one it had. */
  put(accountId: string, avatar: Avatar): Promise<void>;
  /** Removes the account's avatar; whether there was one. */
  delete(accountId: string): Promise<boolean>;
}
