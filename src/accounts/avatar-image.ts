import { JPG } from 'image-size/types/jpg';
import { PNG } from 'image-size/types/png';
import { WEBP } from 'image-size/types/webp';
import { BadRequest, Problem } from '../errors.ts';
import type { AvatarMediaType } from './avatar-store.ts';

/**
 * What an uploaded avatar is, told by its bytes alone: the name of the file and the type the
 * client declared are never asked. image-size reads the header of each format (signature and
 * dimensions; nothing is decoded), and only these three of its readers ever see an upload,
 * each in one pass over at most the image.
 */
const READERS: readonly (readonly [AvatarMediaType, typeof PNG])[] = [
  ['image/jpeg', JPG],
  ['image/png', PNG],
  ['image/webp', WEBP],
];

/**
 * At most 16,777,216 pixels (4096 × 4096, any shape): far more than an avatar is shown at,
 * and a bound on what a client decoding it must hold (64 MiB as RGBA). Within the byte limit
 * a compressed image of a single colour can declare far more pixels than that.
 */
export const AVATAR_PIXEL_LIMIT = 4096 * 4096;

export interface AvatarLimits {
  /** Largest image, bytes (AVATAR_SIZE_LIMIT). */
  bytes: number;
  pixels: number;
}

export interface RecognisedImage {
  mediaType: AvatarMediaType;
  width: number;
  height: number;
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
 * The image's format and dimensions, or a refusal: 400 for no image or a header that cannot
 * be read, 413 beyond the byte limit, 415 for anything but JPEG, PNG and WebP, 400 beyond the
 * pixel limit (the dimensions are what is wrong, not the size of the request).
 */
export function recogniseAvatar(bytes: Uint8Array, limits: AvatarLimits): RecognisedImage {
  if (bytes.length === 0) throw new BadRequest('The avatar is empty');
  if (bytes.length > limits.bytes) throw new ImageTooLarge(limits.bytes);
  const found = READERS.find(([, reader]) => isOf(reader, bytes));
  if (!found) throw new UnsupportedImage();
  const [mediaType, reader] = found;
  let size: { width: number; height: number };
  try {
    size = reader.calculate(bytes);
  } catch {
    throw new BadRequest(`The avatar's ${FORMAT_NAMES[mediaType]} header cannot be read`);
  }
  const { width, height } = size;
  if (!(width > 0 && height > 0))
    throw new BadRequest(`The avatar's ${FORMAT_NAMES[mediaType]} header names no dimensions`);
  if (width * height > limits.pixels)
    throw new BadRequest(
      `The avatar is ${width} × ${height} pixels; at most ${limits.pixels} pixels are accepted`,
    );
  return { mediaType, width, height };
}

const FORMAT_NAMES: Record<AvatarMediaType, string> = {
  'image/jpeg': 'JPEG',
  'image/png': 'PNG',
  'image/webp': 'WebP',
};

/** The reader's signature check; a signature followed by a malformed header is not the format. */
function isOf(reader: typeof PNG, bytes: Uint8Array): boolean {
  try {
    return reader.validate(bytes);
  } catch {
    return false;
  }
}
