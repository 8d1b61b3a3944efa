const ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * The bytes of `text` if it is the canonical base64url spelling of them (RFC 4648 §5, without
 * padding, as every opaque value the service hands out is written), else null. Canonical
 * (§3.5): no padding, no character outside the alphabet, a length some number of bytes has,
 * and the unused bits of the last character zero. Node's decoder is lenient on each of those,
 * so one value would have several spellings; a value that reaches a lookup, a comparison or a
 * MAC check must have one. `bytes`: the length the value must decode to.
 */
export function decodeCanonicalBase64url(text: string, bytes?: number): Buffer | null {
  if (bytes !== undefined && text.length !== Math.ceil((bytes * 4) / 3)) return null;
  if (!ALPHABET.test(text)) return null;
  const decoded = Buffer.from(text, 'base64url');
  // Decoding drops the unused bits and a dangling character; encoding again shows either.
  return decoded.toString('base64url') === text ? decoded : null;
}

/** Whether `text` is the canonical base64url spelling of its bytes (of `bytes` bytes, if given). */
export function isCanonicalBase64url(text: string, bytes?: number): boolean {
  return decodeCanonicalBase64url(text, bytes) !== null;
}
