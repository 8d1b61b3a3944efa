import { BadRequest } from '../errors.ts';
import type { AvatarMediaType } from './avatar-store.ts';

/**
 * An avatar is published to whoever may read it, so what a camera or an editor wrote into the
 * file besides the picture (the Exif GPS position, the camera's serial number, XMP, comments,
 * the time it was taken) is removed before it is stored. The pixels and what their colours
 * mean (colour profiles, the colour transform) are kept byte for byte; nothing is decoded or
 * encoded again. Each format's structure is walked once, front to back, copying the parts kept;
 * a structure that does not hold together (a length past the end, a missing marker) is
 * refused rather than guessed at.
 *
 * Removing Exif removes its orientation tag too: the image is served as its pixels are stored.
 */
export function withoutMetadata(bytes: Uint8Array, mediaType: AvatarMediaType): Uint8Array {
  switch (mediaType) {
    case 'image/jpeg':
      return jpegWithoutMetadata(bytes);
    case 'image/png':
      return pngWithoutMetadata(bytes);
    case 'image/webp':
      return webpWithoutMetadata(bytes);
  }
}

/** A structure that does not hold together: the caller learns what, in the format's terms. */
export class MalformedImage extends BadRequest {
  constructor(format: string, what: string) {
    super(`The avatar's ${format} structure is malformed: ${what}`);
  }
}

/**
 * JPEG (ITU T.81 annex B): marker segments from SOI on. Application segments and comments are
 * what a writer adds, so they are kept only by an allow-list: APP0 as a JFIF header (pixel
 * density), its fields alone (a thumbnail after them is dropped, and so is a JFXX extension),
 * APP2 when it holds an ICC colour profile, and APP14 as Adobe's (the colour transform,
 * without which CMYK and YCCK images decode wrong); every other segment (tables, frame and
 * scan headers) is kept. After a scan header the entropy-coded data is copied
 * as it is (a 0xFF in it is followed by 0x00 or a restart marker), and the segments between
 * the scans of a progressive image follow the same rule. Anything after the end of the image
 * (EOI) is dropped: phones append further images there (depth maps, previews), each with
 * metadata of its own. An image cut short in its data is kept as it is, as browsers show it.
 */
function jpegWithoutMetadata(bytes: Uint8Array): Uint8Array {
  const fail = (what: string) => new MalformedImage('JPEG', what);
  const kept: Uint8Array[] = [];
  /** Where the bytes not yet copied begin: whatever lies between dropped segments is kept. */
  let from = 0;
  let at = 2; // after SOI, which recognition checked
  let scanned = false;
  while (at < bytes.length) {
    if (bytes[at] !== 0xff) {
      if (!scanned) throw fail(`a marker was expected at byte ${at}`);
      at++;
      continue;
    }
    // Any marker may be preceded by fill bytes (0xFF).
    let marker = at + 1;
    while (marker < bytes.length && bytes[marker] === 0xff) marker++;
    if (marker >= bytes.length) break;
    const code = bytes[marker] as number;
    if (code === 0xd9) {
      if (!scanned) throw fail('it ends (EOI) before its image data');
      kept.push(bytes.subarray(from, marker + 1));
      return concat(kept);
    }
    // In entropy-coded data 0xFF 0x00 is a data byte; restart markers (and TEM) stand alone.
    if (code === 0x00 || code === 0x01 || isRestart(code)) {
      if (!scanned && code === 0x00) throw fail(`a marker was expected at byte ${at}`);
      at = marker + 1;
      continue;
    }
    if (marker + 3 > bytes.length) throw fail(`the segment at byte ${at} runs past the end of the image`);
    const length = ((bytes[marker + 1] as number) << 8) | (bytes[marker + 2] as number);
    const end = marker + 1 + length;
    if (length < 2) throw fail(`the segment at byte ${at} has a length of ${length}`);
    if (end > bytes.length) throw fail(`the segment at byte ${at} runs past the end of the image`);
    if (isJpegMetadata(code)) {
      kept.push(bytes.subarray(from, at));
      from = end;
      const segment = keptJpegSegment(code, bytes.subarray(marker + 3, end));
      if (segment) kept.push(segment);
    }
    at = end;
    if (code === 0xda) scanned = true;
  }
  if (!scanned) throw fail('it ends before its image data (no scan)');
  // Cut short in its data (no EOI): what arrived, as browsers show it.
  kept.push(bytes.subarray(from));
  return concat(kept);
}

const isRestart = (code: number): boolean => code >= 0xd0 && code <= 0xd7;

/** The application segments (APP0–APP15) and comments (COM). */
function isJpegMetadata(code: number): boolean {
  return (code >= 0xe0 && code <= 0xef) || code === 0xfe;
}

/** The fields of a JFIF header (JFIF 1.02): identifier, version, units, densities, thumbnail size. */
const JFIF_FIELDS = 14;

/** What is kept of an application segment or comment (whole, with its marker), or nothing. */
function keptJpegSegment(code: number, payload: Uint8Array): Uint8Array | null {
  const startsWith = (identifier: string) => ascii(payload, 0, identifier.length) === identifier;
  if (code === 0xe0 && payload.length >= JFIF_FIELDS && startsWith('JFIF\0')) {
    const segment = new Uint8Array(4 + JFIF_FIELDS);
    segment.set([0xff, code, 0, 2 + JFIF_FIELDS]);
    segment.set(payload.subarray(0, JFIF_FIELDS), 4);
    // No thumbnail follows: its width and height are zero.
    segment[4 + 12] = 0;
    segment[4 + 13] = 0;
    return segment;
  }
  const whole = () => {
    const segment = new Uint8Array(4 + payload.length);
    segment.set([0xff, code, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]);
    segment.set(payload, 4);
    return segment;
  };
  if (code === 0xe2 && startsWith('ICC_PROFILE\0')) return whole();
  if (code === 0xee && startsWith('Adobe')) return whole();
  return null;
}

/**
 * PNG (PNG third edition, W3C): chunks from the signature on, up to IEND. Only the chunks that
 * make up or describe the picture are kept (PNG_KEPT: header, palette, image data,
 * transparency, colour space and the physical pixel size, and APNG's animation chunks); every
 * other one is dropped: text (tEXt, zTXt, iTXt: XMP lives in iTXt), Exif (eXIf), the time of
 * the last change (tIME), C2PA manifests (caBX) and any private or unknown chunk, whatever it
 * holds. Anything after IEND is dropped.
 */
function pngWithoutMetadata(bytes: Uint8Array): Uint8Array {
  const fail = (what: string) => new MalformedImage('PNG', what);
  const view = viewOf(bytes);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)]; // the signature, which recognition checked
  let at = 8;
  while (at < bytes.length) {
    if (at + 12 > bytes.length) throw fail(`the chunk at byte ${at} is cut short`);
    const length = view.getUint32(at);
    const type = ascii(bytes, at + 4);
    const end = at + 12 + length;
    if (end > bytes.length) throw fail(`the ${type} chunk at byte ${at} runs past the end of the image`);
    if (PNG_KEPT.has(type)) kept.push(bytes.subarray(at, end));
    at = end;
    if (type === 'IEND') break;
  }
  return concat(kept);
}

const PNG_KEPT: ReadonlySet<string> = new Set([
  'IHDR',
  'PLTE',
  'IDAT',
  'IEND',
  'tRNS',
  'gAMA',
  'cHRM',
  'sRGB',
  'iCCP',
  'cICP',
  'sBIT',
  'pHYs',
  'acTL',
  'fcTL',
  'fdAT',
]);

/**
 * WebP (RIFF, RFC 9649): chunks after `RIFF <size> WEBP`. Only the chunks that make up or
 * describe the picture are kept (WEBP_KEPT: the VP8X header, the bitstreams, alpha, animation
 * and the ICC profile); every other one is dropped: EXIF, `XMP `, C2PA manifests and any
 * unknown chunk, whatever it holds. The VP8X header's flags are made to say what is kept (no
 * Exif, no XMP, an ICC profile only when its chunk is kept, the reserved bits clear), so that
 * no reader looks for what is gone. The RIFF size is written anew; anything after the RIFF's
 * end is dropped.
 */
function webpWithoutMetadata(bytes: Uint8Array): Uint8Array {
  const fail = (what: string) => new MalformedImage('WebP', what);
  const view = viewOf(bytes);
  const riffEnd = 8 + view.getUint32(4, true); // recognition checked RIFF … WEBP
  if (riffEnd > bytes.length) throw fail('its RIFF size runs past the end of the image');
  const kept: Uint8Array[] = [];
  let vp8x: Uint8Array | undefined;
  let profiled = false;
  let pictured = false;
  let at = 12;
  while (at < riffEnd) {
    if (at + 8 > riffEnd) throw fail(`the chunk at byte ${at} is cut short`);
    const fourcc = ascii(bytes, at);
    const size = view.getUint32(at + 4, true);
    const end = at + 8 + size;
    if (end > riffEnd) throw fail(`the ${fourcc.trim()} chunk at byte ${at} runs past the end of the image`);
    const keep = WEBP_KEPT.has(fourcc);
    if (fourcc === 'VP8X') {
      if (size < 1) throw fail('its VP8X header is empty');
      vp8x = bytes.slice(at, end);
      kept.push(vp8x);
    } else if (keep) {
      kept.push(bytes.subarray(at, end));
      profiled ||= fourcc === 'ICCP';
      pictured ||= WEBP_IMAGE_CHUNKS.has(fourcc);
    }
    // Chunks are padded to an even size; the last one's padding is written if it is missing.
    if (size % 2 === 1) {
      if (keep) kept.push(new Uint8Array(1));
      at = end + 1;
    } else {
      at = end;
    }
  }
  if (vp8x) vp8x[8] = (vp8x[8] as number) & (profiled ? VP8X_KEPT_FLAGS | VP8X_ICC : VP8X_KEPT_FLAGS);
  // Its header may name dimensions the RIFF holds no picture for (a RIFF size cut short).
  if (!pictured) throw fail('it holds no image data (VP8, VP8L or ANMF chunk)');
  const body = concat(kept);
  const header = new Uint8Array(12);
  header.set(bytes.subarray(0, 12));
  viewOf(header).setUint32(4, 4 + body.length, true);
  return concat([header, body]);
}

const WEBP_KEPT: ReadonlySet<string> = new Set(['VP8X', 'VP8 ', 'VP8L', 'ALPH', 'ANIM', 'ANMF', 'ICCP']);
const WEBP_IMAGE_CHUNKS: ReadonlySet<string> = new Set(['VP8 ', 'VP8L', 'ANMF']);
/** VP8X flags: an ICC profile; alpha and animation, which describe the pixels and are kept. */
const VP8X_ICC = 0x20;
const VP8X_KEPT_FLAGS = 0x10 | 0x02;

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function ascii(bytes: Uint8Array, at: number, length = 4): string {
  return String.fromCharCode(...bytes.subarray(at, at + length));
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return joined;
}
