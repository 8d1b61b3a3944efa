import { createHmac, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeCanonicalBase64url } from '../base64url.ts';
import type { RefreshTokenMacKeys } from './key-ring.ts';

/**
 * The checked authorization request travels in the sign-in form, sealed: an HMAC under a key
 * of its own (derived from one of the key ring's refresh-token MAC keys, named in the seal)
 * proves it is one the service checked and has not changed, and an expiry bounds its life.
 * Nothing is stored when a page is shown, so showing it costs no storage; only a used seal's
 * id is remembered, so each seal works once. The account pages' forms are sealed the same way,
 * under a key of their own.
 */

/**
 * The refresh-token MAC keys of the key ring: the current one seals, any one still known
 * opens, so a form shown just before the keys rotate, or by another node, still works.
 */
export type SealingKeys = RefreshTokenMacKeys;
export interface AuthorizationRequest {
  clientName: string;
  /** As the request gave it: a loopback URI may differ from the registered one in its port. */
  redirectUri: string;
  scope: string;
  /** Handed back to the client untouched; null when the request had none. */
  state: string | null;
  /** RFC 7636, method S256. */
  codeChallenge: string;
}

/** What a seal carries: the sealed value, with its id and expiry. */
export type Sealed<T> = T & {
  /** 128 random bits: what is remembered once the seal is used. */
  id: string;
  /** Epoch milliseconds. */
  expiresAt: number;
};

export type SealedRequest = Sealed<AuthorizationRequest>;

/**
 * The longest sealed request a seal carries, in base64url characters. The authorization
 * endpoint bounds every parameter it seals so that the largest request it accepts fits.
 */
export const MAX_SEALED_LENGTH = 16_000;

/**
 * `<key id>.<base64url JSON>.<base64url HMAC-SHA256>`; bounded, so a forged one costs little
 * to refuse.
 */
const MAC_BYTES = 32;
const SEAL = new RegExp(`^[A-Za-z0-9_-]{1,64}\\.[A-Za-z0-9_-]{1,${MAX_SEALED_LENGTH}}\\.[A-Za-z0-9_-]{43}$`);

export interface Sealer<T extends object> {
  seal(value: T): string;
  /** The value of an authentic seal that has not expired; null for anything else. */
  open(value: string): Promise<Sealed<T> | null>;
}

export type RequestSealer = Sealer<AuthorizationRequest>;

interface SealerOptions {
  keys: SealingKeys;
  ttlSeconds: number;
  now?: () => number;
}

export function createRequestSealer(options: SealerOptions): RequestSealer {
  return createSealer<AuthorizationRequest>('sign-in form seal', options);
}

/**
 * A sealer for one kind of form. `purpose` names it in the key derivation, so that a seal of
 * one kind never opens as another (nor passes for a refresh token's digest).
 */
export function createSealer<T extends object>(purpose: string, options: SealerOptions): Sealer<T> {
  const now = options.now ?? Date.now;
  const mac = (refreshTokenMacKey: KeyObject, payload: string) => {
    const key = createHmac('sha256', refreshTokenMacKey).update(purpose).digest();
    return createHmac('sha256', key).update(payload).digest();
  };
  return {
    seal(request) {
      const sealed: Sealed<T> = {
        ...request,
        id: randomBytes(16).toString('base64url'),
        expiresAt: now() + options.ttlSeconds * 1000,
      };
      const { id, key } = options.keys.current();
      const payload = Buffer.from(JSON.stringify(sealed)).toString('base64url');
      return `${id}.${payload}.${mac(key, `${id}.${payload}`).toString('base64url')}`;
    },
    async open(value) {
      if (!SEAL.test(value)) return null;
      const [id = '', payload = '', tag = ''] = value.split('.');
      const key = await options.keys.find(id);
      if (!key) return null;
      // One spelling of each (RFC 4648 §3.5), as seal() wrote them, so one seal is one value.
      const presented = decodeCanonicalBase64url(tag, MAC_BYTES);
      const json = decodeCanonicalBase64url(payload);
      if (!presented || !json) return null;
      const expected = mac(key, `${id}.${payload}`);
      if (!timingSafeEqual(presented, expected)) return null;
      // Authentic, so written by seal(): its shape is known.
      const sealed = JSON.parse(json.toString('utf8')) as Sealed<T>;
      return sealed.expiresAt > now() ? sealed : null;
    },
  };
}
