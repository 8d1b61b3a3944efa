/**
 * Small images for the avatar tests. PNGs are written here (RFC 2083: signature, IHDR, IDAT,
 * IEND, each chunk with its CRC), in any size and colour. JPEG and WebP need an encoder, so
 * those are two-by-two images Chromium's canvas encoded (toDataURL), the colour profile left
 * out, kept here as Base64: a baseline JPEG, a lossy and a lossless WebP.
 */
import { crc32, deflateSync } from 'node:zlib';

/**
 * A width × height PNG of one colour, 8-bit RGB; `padTo` adds a private ancillary chunk up to
 * that size (which an avatar loses when it is stored, as every chunk not on the allow-list).
 */
export function png(width: number, height: number, rgb = [0x24, 0x57, 0xc5], padTo?: number): Buffer {
  const row = Buffer.concat([Buffer.of(0), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const data = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  const chunks = [pngChunk('IHDR', ihdr(width, height)), pngChunk('IDAT', data), pngChunk('IEND')];
  const size = PNG_SIGNATURE.length + chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  // An ancillary chunk (lower-case first letter) that readers skip: 12 bytes of framing.
  if (padTo !== undefined) chunks.splice(1, 0, pngChunk('prVt', Buffer.alloc(padTo - size - 12, 0x61)));
  return Buffer.concat([PNG_SIGNATURE, ...chunks]);
}

/**
 * A PNG whose header declares width × height, with hardly any image data: what the service
 * reads is the header, so this is how a huge image of one colour looks to it.
 */
export function pngDeclaring(width: number, height: number): Buffer {
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr(width, height)),
    pngChunk('IDAT', deflateSync(Buffer.alloc(64))),
    pngChunk('IEND'),
  ]);
}

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');

function ihdr(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  return header;
}

function pngChunk(type: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

export const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19i' +
    'Z2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj' +
    'Y2NjY2NjY2P/wAARCAACAAIDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAX/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QA' +
    'FAEBAAAAAAAAAAAAAAAAAAAABf/EABQRAQAAAAAAAAAAAAAAAAAAAAD/2gAMAwEAAhEDEQA/AJIB4e//2Q==',
  'base64',
);

/** The JPEG above with the dimensions of its frame header (SOF0) changed. */
export function jpegDeclaring(width: number, height: number): Buffer {
  const copy = Buffer.from(JPEG);
  const frame = copy.indexOf(Buffer.of(0xff, 0xc0));
  copy.writeUInt16BE(height, frame + 5);
  copy.writeUInt16BE(width, frame + 7);
  return copy;
}

export const WEBP_LOSSY = Buffer.from(
  'UklGRjYAAABXRUJQVlA4ICoAAACQAQCdASoCAAIAAsBMJaACdLoAA5gA/uy9j/yU/ku6Vtw36FGyiaTAAAA=',
  'base64',
);

export const WEBP_LOSSLESS = Buffer.from('UklGRh4AAABXRUJQVlA4TBEAAAAvAUAAAAfQq5K0uP+BiOh/AAA=', 'base64');

/** A one-pixel GIF: an image, but not of an accepted format. */
export const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>',
);

export const HTML = Buffer.from('<!doctype html><title>x</title><script>alert(document.cookie)</script>');

/**
 * A width × height PNG with these chunks between its header (IHDR) and its image data, as a
 * camera or an editor writes text, Exif and time chunks there: `[type, data]` each.
 */
export function pngWithChunks(
  width: number,
  height: number,
  extra: readonly (readonly [string, Buffer])[],
): Buffer {
  const image = png(width, height);
  const afterHeader = PNG_SIGNATURE.length + 12 + 13;
  return Buffer.concat([
    image.subarray(0, afterHeader),
    ...extra.map(([type, data]) => pngChunk(type, data)),
    image.subarray(afterHeader),
  ]);
}

/** A JPEG marker segment (ITU T.81 B.1.1.4): the marker, its length, the payload. */
export function jpegSegment(marker: number, payload: Buffer): Buffer {
  const header = Buffer.of(0xff, marker, 0, 0);
  header.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([header, payload]);
}

/**
 * The JPEG above with these segments after its JFIF header (APP0), where cameras put Exif,
 * and `trailer` after its end (EOI), where phones append more images.
 */
export function jpegWithSegments(segments: readonly Buffer[], trailer: Buffer = Buffer.alloc(0)): Buffer {
  const afterApp0 = 4 + JPEG.readUInt16BE(4);
  return Buffer.concat([JPEG.subarray(0, afterApp0), ...segments, JPEG.subarray(afterApp0), trailer]);
}

/** A RIFF chunk: its FourCC, its size (little-endian), the data, padded to an even length. */
export function riffChunk(fourcc: string, data: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(fourcc, 0, 'ascii');
  header.writeUInt32LE(data.length, 4);
  return Buffer.concat([header, data, Buffer.alloc(data.length % 2)]);
}

/** VP8X flags (the WebP container specification): an ICC profile, Exif, XMP. */
export const VP8X_ICC = 0x20;
export const VP8X_EXIF = 0x08;
export const VP8X_XMP = 0x04;

/**
 * The extended form of the lossy WebP above (2 × 2): a VP8X header with `flags`, then the
 * chunks `before` its bitstream and `after` it, as the container orders ICCP and EXIF/XMP.
 */
export function webpExtended(flags: number, before: readonly Buffer[], after: readonly Buffer[]): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x[0] = flags;
  vp8x.writeUIntLE(2 - 1, 4, 3);
  vp8x.writeUIntLE(2 - 1, 7, 3);
  const body = Buffer.concat([
    Buffer.from('WEBP', 'ascii'),
    riffChunk('VP8X', vp8x),
    ...before,
    WEBP_LOSSY.subarray(12),
    ...after,
  ]);
  const header = Buffer.from('RIFF\0\0\0\0', 'ascii');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

/**
 * A PNG that declares width × height twice: first inside a leading `CgBI` chunk (Apple's
 * variant of PNG), whose bytes spell a 1 × 1 IHDR where a reader of that variant looks for
 * one, then in the real IHDR after it. A service that measures one header and keeps the other
 * stores the large one.
 */
export function pngBehindCgbi(width: number, height: number): Buffer {
  const fake = Buffer.concat([Buffer.alloc(8), pngChunk('IHDR', ihdr(1, 1))]);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('CgBI', fake),
    pngChunk('IHDR', ihdr(width, height)),
    pngChunk('IDAT', deflateSync(Buffer.alloc(64))),
    pngChunk('IEND'),
  ]);
}

/**
 * The JPEG above with one fill byte (0xFF, ITU T.81 B.1.1.2: any marker may be preceded by
 * them) before its frame header (SOF0), which declares width × height.
 */
export function jpegWithFillByte(width = 2, height = 2): Buffer {
  const declaring = jpegDeclaring(width, height);
  const frame = declaring.indexOf(Buffer.of(0xff, 0xc0));
  return Buffer.concat([declaring.subarray(0, frame), Buffer.of(0xff), declaring.subarray(frame)]);
}

/**
 * `jpegWithFillByte(width, height)`, then, after its end (EOI), 64 KiB of zeros and a frame
 * header (SOF0) of a 1 × 1 greyscale image: where a reader that takes the fill byte for a
 * segment of its own, and then scans the bytes for a marker, lands on a header.
 */
export function jpegBehindFillByte(width: number, height: number): Buffer {
  const fakeFrame = jpegSegment(0xc0, Buffer.of(8, 0, 1, 0, 1, 1, 1, 0x11, 0));
  return Buffer.concat([jpegWithFillByte(width, height), Buffer.alloc(65536), Buffer.of(2), fakeFrame]);
}

/**
 * The lossless WebP above with the dimensions of its bitstream header (VP8L, 14 bits each, so
 * up to 16384) changed.
 */
export function webpLosslessDeclaring(width: number, height: number): Buffer {
  const copy = Buffer.from(WEBP_LOSSLESS);
  const header = copy.indexOf(Buffer.from('VP8L', 'ascii')) + 8;
  assertSignature(copy[header] === 0x2f);
  const bits = copy.readUInt32LE(header + 1);
  const dimensions = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
  copy.writeUInt32LE(((bits & ~0x0fffffff) | dimensions) >>> 0, header + 1);
  return copy;
}

/** The lossy WebP above with the dimensions of its key frame header (VP8, 14 bits each) changed. */
export function webpLossyDeclaring(width: number, height: number): Buffer {
  const copy = Buffer.from(WEBP_LOSSY);
  const frame = copy.indexOf(Buffer.of(0x9d, 0x01, 0x2a)) + 3;
  copy.writeUInt16LE(width & 0x3fff, frame);
  copy.writeUInt16LE(height & 0x3fff, frame + 2);
  return copy;
}

function assertSignature(ok: boolean): void {
  if (!ok) throw new Error('not the image this helper patches');
}

/** VP8X flag: an animation (ANIM and ANMF chunks). */
export const VP8X_ANIMATION = 0x02;

/**
 * An animated WebP of one 2 × 2 frame (the lossy bitstream above) whose frame (ANMF) carries
 * `inside` among its sub-chunks after the bitstream, where the container specification allows
 * unknown chunks.
 */
export function webpAnimated(inside: readonly Buffer[], flags = 0): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x[0] = VP8X_ANIMATION | flags;
  vp8x.writeUIntLE(2 - 1, 4, 3);
  vp8x.writeUIntLE(2 - 1, 7, 3);
  const anim = Buffer.alloc(6);
  const frame = Buffer.alloc(16);
  frame.writeUIntLE(2 - 1, 6, 3);
  frame.writeUIntLE(2 - 1, 9, 3);
  frame.writeUIntLE(100, 12, 3);
  const body = Buffer.concat([
    Buffer.from('WEBP', 'ascii'),
    riffChunk('VP8X', vp8x),
    riffChunk('ANIM', anim),
    riffChunk('ANMF', Buffer.concat([frame, WEBP_LOSSY.subarray(12), ...inside])),
  ]);
  const header = Buffer.from('RIFF\0\0\0\0', 'ascii');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}
