const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The same bytes spelt otherwise: the last character with its lowest bit flipped, which a
 * lenient decoder drops when the length leaves it unused (every length but a multiple of 4).
 * Of a value with `.`-separated parts (a JWS, a seal), the last part.
 */
export function respelled(text: string): string {
  const last = text.slice(text.lastIndexOf('.') + 1);
  if (last.length % 4 === 0) throw new Error('every bit of this spelling is used');
  const value = ALPHABET.indexOf(text.at(-1) ?? '');
  return `${text.slice(0, -1)}${ALPHABET[value ^ 1]}`;
}
