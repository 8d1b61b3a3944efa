import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { decodeCanonicalBase64url, isCanonicalBase64url } from '../src/base64url.ts';
import { respelled } from './support/base64url.ts';

describe('canonical base64url (RFC 4648 §3.5)', () => {
  test('the encoding of any bytes is taken, and decodes to them', () => {
    for (const size of [0, 1, 2, 3, 16, 31, 32, 33, 256]) {
      const bytes = randomBytes(size);
      const text = bytes.toString('base64url');
      assert.deepEqual(decodeCanonicalBase64url(text), bytes, `${size} bytes`);
      assert.deepEqual(decodeCanonicalBase64url(text, size), bytes, `${size} bytes, expected`);
    }
  });

  test('another spelling of the same bytes is refused: unused bits set, padding, base64 characters', () => {
    for (const size of [1, 2, 16, 32, 256]) {
      const bytes = randomBytes(size);
      const text = bytes.toString('base64url');
      const other = respelled(text);
      assert.notEqual(other, text);
      assert.deepEqual(Buffer.from(other, 'base64url'), bytes, 'Node decodes it to the same bytes');
      assert.equal(isCanonicalBase64url(other), false, `${size} bytes: ${other}`);
      assert.equal(isCanonicalBase64url(`${text}${'='.repeat((4 - (text.length % 4)) % 4 || 4)}`), false);
    }
    const withBase64Alphabet = Buffer.of(0xfb, 0xff).toString('base64');
    assert.equal(withBase64Alphabet, '+/8=');
    assert.equal(isCanonicalBase64url('-_8'), true);
    assert.equal(isCanonicalBase64url('+/8'), false);
  });

  test('a length no number of bytes has, a wrong expected length, or a foreign character is refused', () => {
    assert.equal(isCanonicalBase64url('AAAAA'), false, 'a dangling character');
    assert.equal(isCanonicalBase64url('AAAA', 4), false);
    assert.equal(isCanonicalBase64url('AAAA', 3), true);
    for (const text of ['AA AA', 'AA\nAA', 'AA.A', 'ÀAAA']) assert.equal(isCanonicalBase64url(text), false);
  });
});
