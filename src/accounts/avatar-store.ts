/**
 * A user's avatar as the accounts domain keeps it, and the store it needs for that. Every
 * backend implements the store (src/stores/), chosen only by its URL: one that every node of
 * the service reads, since any of them may be asked for the image.
 */

import { randomBytes } from 'node:crypto';

/** The image formats an avatar may be in, by the media type it is served with. */
export const AVATAR_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const;
export type AvatarMediaType = (typeof AVATAR_MEDIA_TYPES)[number];

export interface Avatar {
  /** What the image's bytes were recognised as; never what the client declared. */
  mediaType: AvatarMediaType;
  bytes: Uint8Array;
}

/**
 * Which change to an account's avatar is the later one: every upload and removal draws a new
 * generation, and generations compare as strings. Drawn from the clock (milliseconds), then
 * a count within this process, then random bits (hexadecimal, fixed width), so that two changes made at once by two
 * processes still differ; changes closer together than the processes' clocks agree count as
 * concurrent, and either may be the later.
 */
export type AvatarGeneration = string;

let drawn = 0;
/** Never back in time within a process, should its clock be set back. */
let latest = 0;

export function nextAvatarGeneration(now: Date): AvatarGeneration {
  drawn = (drawn + 1) % 0x1_0000_0000;
  latest = Math.max(latest, now.getTime());
  const hex = (value: number, digits: number) => value.toString(16).padStart(digits, '0');
  return `${hex(latest, 12)}${hex(drawn, 8)}${randomBytes(4).toString('hex')}`;
}

/**
 * The generation of an account's deletion: later than any drawn (`~` sorts after every hex
 * digit), so that the removal stays, and no upload still under way stores an image after it.
 */
export const FINAL_AVATAR_GENERATION: AvatarGeneration = '~';

/** The latest change stored for an account: its generation, and whether it left an image. */
export interface AvatarChange {
  generation: AvatarGeneration;
  present: boolean;
}

/** What a removal found: an image it removed, none, or a later change it left in place. */
export type AvatarRemoval = 'removed' | 'absent' | 'superseded';

/**
 * One avatar per account, under the account's id. The account record says whether it has
 * one (`hasAvatar`), for the links of its representation; this store is what is served.
 *
 * Each change carries its generation, and the store keeps the latest: a change older than the
 * one stored is refused, so that requests arriving out of order end where the latest change
 * put them. A removal leaves its generation behind (a tombstone, no image) for the same
 * reason: an older upload arriving after it must not bring an image back.
 */
export interface AvatarStore {
  /** The account's avatar, or null. */
  find(accountId: string): Promise<Avatar | null>;
  /** The latest change stored for the account, without reading the image; null before the first. */
  latestChange(accountId: string): Promise<AvatarChange | null>;
  /**
   * Stores the account's avatar as of `generation`, replacing the one it had, unless a later
   * change is stored: whether it was stored.
   */
  put(accountId: string, avatar: Avatar, generation: AvatarGeneration): Promise<boolean>;
  /** Removes the account's avatar as of `generation`, unless a later change is stored. */
  delete(accountId: string, generation: AvatarGeneration): Promise<AvatarRemoval>;
}
