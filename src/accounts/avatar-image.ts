import sharp, { type Sharp } from 'sharp';
import { BadRequest, Problem, ServiceUnavailable } from '../errors.ts';
import type { Avatar, AvatarMediaType } from './avatar-store.ts';

/**
 * At most 16,777,216 pixels (4096 × 4096, any shape) are decoded: far more than an avatar is
 * shown at, and a bound on what one upload makes the service hold (64 MiB as RGBA). Within the
 * byte limit a compressed image of a single colour can declare far more pixels than that.
 */
export const AVATAR_PIXEL_LIMIT = 4096 * 4096;

/**
 * Decodes at once per process, and how many more may wait for one. Each decode runs on one
 * libvips thread (the machines this runs on have few cores, and every worker decodes), off the
 * event loop; beyond the queue an upload is refused at once rather than held in memory.
 */
const DECODES_AT_ONCE = 2;
const DECODES_WAITING = 32;

export interface AvatarLimits {
  /** Largest image, bytes (AVATAR_SIZE_LIMIT). */
  bytes: number;
  /** Most pixels decoded. */
  pixels: number;
  /** Longest side of a stored avatar, pixels (AVATAR_MAX_SIDE). */
  side: number;
}

/** Not one of the accepted formats. */
export class UnsupportedImage extends Problem {
  constructor() {
    super(415, 'The avatar must be a JPEG, PNG or WebP image (recognised by its content)');
  }
}

export class ImageTooLarge extends Problem {
  constructor(limit: number) {
    super(413, `The avatar exceeds ${limit} bytes`);
  }
}

/**
 * libvips' settings, which are the process's: no operation cache (it keeps decoded images for
 * reuse, and an upload is never seen twice) and one thread an image (decodes are bounded by
 * count, and the CPU is the workers'). Set once by the composition root, before any upload.
 */
export function configureImageLibrary(): void {
  sharp.cache(false);
  sharp.concurrency(1);
}

/** Turns uploaded bytes into the avatar that is stored. */
export type AvatarEncoder = (bytes: Uint8Array) => Promise<Avatar>;

/**
 * What an uploaded image becomes: decoded by libvips (sharp), turned upright by its Exif
 * orientation, fitted within `side` × `side` without enlarging, and encoded again in the format
 * it came in, with its colour profile and nothing else (no Exif, XMP, comments, text chunks,
 * further frames or trailing bytes: nothing of the upload is copied, only its pixels are).
 *
 * The format is told by the bytes alone, and only the JPEG, PNG and WebP decoders ever see an
 * upload: libvips picks its loader by the same signatures. The pixel limit applies to what the
 * decoder reads, before it allocates any pixel, so no arrangement of headers gets a larger
 * image past it; and what is stored is at most `side` pixels a side, whatever came in.
 *
 * Refusals: 400 for no image or one that does not decode, 413 beyond the byte limit, 415 for
 * anything but the three formats, 400 beyond the pixel limit, 503 when too many uploads wait.
 */
export function createAvatarEncoder(limits: AvatarLimits): AvatarEncoder {
  const decodes = boundedConcurrency(DECODES_AT_ONCE, DECODES_WAITING);

  return async (bytes) => {
    if (bytes.length === 0) throw new BadRequest('The avatar is empty');
    if (bytes.length > limits.bytes) throw new ImageTooLarge(limits.bytes);
    const mediaType = mediaTypeOf(bytes);
    if (!mediaType) throw new UnsupportedImage();
    const encoded = await decodes(() => reencode(bytes, mediaType, limits));
    return { mediaType, bytes: encoded };
  };
}

async function reencode(
  bytes: Uint8Array,
  mediaType: AvatarMediaType,
  limits: AvatarLimits,
): Promise<Buffer> {
  const image = sharp(bytes, { limitInputPixels: limits.pixels, failOn: 'warning', autoOrient: true })
    .resize({ width: limits.side, height: limits.side, fit: 'inside', withoutEnlargement: true })
    .keepIccProfile();
  try {
    // The loader libvips chose (reading the header only) must be the one the signature named.
    if ((await image.metadata()).format !== FORMATS[mediaType]) throw new UnsupportedImage();
    return await ENCODERS[mediaType](image).toBuffer();
  } catch (error) {
    if (error instanceof Problem) throw error;
    const message = error instanceof Error ? error.message : '';
    if (/pixel limit/i.test(message))
      throw new BadRequest(`The avatar has more than ${limits.pixels} pixels`);
    throw new BadRequest(`The avatar cannot be decoded as ${NAMES[mediaType]}`);
  }
}

const FORMATS = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' } as const;
const NAMES: Record<AvatarMediaType, string> = {
  'image/jpeg': 'JPEG',
  'image/png': 'PNG',
  'image/webp': 'WebP',
};

/** Each format encoded again as itself: PNG lossless, JPEG and WebP (lossless ones too) lossy, as photos are. */
const ENCODERS: Record<AvatarMediaType, (image: Sharp) => Sharp> = {
  'image/jpeg': (image) => image.jpeg({ quality: 85 }),
  'image/png': (image) => image.png(),
  'image/webp': (image) => image.webp({ quality: 85 }),
};

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The format by its signature (the first bytes every decoder of it checks), or null. */
function mediaTypeOf(bytes: Uint8Array): AvatarMediaType | null {
  const startsWith = (expected: readonly number[], at = 0) =>
    expected.every((byte, index) => bytes[at + index] === byte);
  if (startsWith([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(PNG_SIGNATURE)) return 'image/png';
  if (startsWith([0x52, 0x49, 0x46, 0x46]) && startsWith([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return null;
}

/**
 * Runs at most `running` tasks at once and queues at most `waiting` more; beyond that a task is
 * refused with 503 at once. (No Retry-After: the service sends none, as its contract says.)
 */
function boundedConcurrency(running: number, waiting: number) {
  let active = 0;
  const queue: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= running) {
      if (queue.length >= waiting)
        throw new ServiceUnavailable('Too many avatars are being processed; try again shortly');
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      active++;
    }
    try {
      return await task();
    } finally {
      // The slot passes to the next in line, or is freed.
      const next = queue.shift();
      if (next) next();
      else active--;
    }
  };
}
