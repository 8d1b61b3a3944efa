import { constants, type KeyObject, randomUUID, sign } from 'node:crypto';
import { errors, jwtVerify } from 'jose';
import type { AccountKind } from '../accounts/model.ts';
import { isCanonicalBase64url } from '../base64url.ts';
import { BoundedMap } from '../bounded-map.ts';
import { InvalidToken } from '../errors.ts';

/** How many verified access tokens a process remembers (about 1 KB each). */
const VERIFIED_TOKENS_KEPT = 10_000;

/** RFC 9068 §2.1: the media type of a JWT access token, sent in its `typ` header. */
const ACCESS_TOKEN_TYPE = 'at+jwt';

export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

/** Who an access token was issued to: an account, or (client credentials) the client itself. */
export type TokenSubject = { kind: AccountKind; id: string } | { kind: 'client'; id: string };

export interface AccessTokenClaims {
  subject: TokenSubject;
  clientId: string;
  /**
   * The id of the client's registration (claim `client_rid`): a client deleted and registered
   * again under the same `client_id` is another registration, which the old tokens do not name.
   * Absent from tokens issued before the claim existed.
   */
  clientRegistration?: string;
  scope: string;
  /** The credential stamp of an account subject (see accounts/sessions.ts); none for clients. */
  credentialStamp?: string;
}

/** The claims of a token that verified, and when it was issued (`iat`, seconds since the epoch). */
export interface VerifiedAccessToken extends AccessTokenClaims {
  issuedAt: number;
}

export interface IssuedAccessToken {
  token: string;
  expiresIn: number;
}

/** The signing keys: one signs, and every key still trusted verifies the tokens carrying its `kid`. */
export interface AccessTokenKeys {
  signingKey(): { privateKey: KeyObject; kid: string };
  /** The public key of a trusted `kid` among the keys in force; undefined for a retired or unknown one. */
  verificationKey(kid: string): KeyObject | undefined;
  /**
   * The same, but a `kid` not among the keys in force is looked for in a newer generation of
   * the ring first: another process may already sign with it.
   */
  findVerificationKey(kid: string): Promise<KeyObject | undefined>;
}

export interface AccessTokenService {
  issueAccessToken(claims: AccessTokenClaims): Promise<IssuedAccessToken>;
  /** Throws InvalidToken with the reason when the token is not one of ours or has expired. */
  verifyAccessToken(token: string): Promise<VerifiedAccessToken>;
}

export function createAccessTokenService(options: {
  keys: AccessTokenKeys;
  algorithm: SigningAlgorithm;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}): AccessTokenService {
  const { keys, algorithm, issuer, audience, ttlSeconds } = options;
  const signature = signer(algorithm);
  /** The encoded JWS header of the current signing key: it changes only with the `kid`. */
  let header = { kid: '', encoded: '' };
  /**
   * Tokens that verified, by their exact text, until they expire. A client presents the same
   * access token on every request for a day, and checking its RSA signature again each time
   * was the largest cost of an authenticated request. The result for the same string cannot
   * change while its key is trusted (a `kid` is the thumbprint of one key), so each use checks
   * that the key has not been retired since, and that the token has not expired. Bounded: the
   * oldest entry goes first.
   *
   * Looked up by the token's last characters (its signature's) and then compared whole: a Map
   * hashes its string key on every lookup of a string it has not seen, and hashing the whole
   * 900-character token of each request cost more than a microsecond, twenty times the
   * lookup by its tail. A token that only shares the tail is not the entry's, and is verified.
   */
  const verified = new BoundedMap<
    string,
    { token: string; claims: VerifiedAccessToken; kid: string; expiresAtMs: number }
  >(VERIFIED_TOKENS_KEPT);

  /**
   * An RFC 9068 JWT: the JWS Compact Serialization (RFC 7515 §7.1) of the claims, signed with
   * `node:crypto` on libuv's thread pool, so a signature never holds up the event loop. A
   * signature is most of what a token costs; jose (through WebCrypto) spent a tenth more CPU
   * per token around the same signature (docs/benchmarks.md), and the token is simple enough
   * to write directly: a fixed header, and claims of our own making.
   */
  async function issueAccessToken(claims: AccessTokenClaims): Promise<IssuedAccessToken> {
    const { privateKey, kid } = keys.signingKey();
    if (header.kid !== kid)
      header = { kid, encoded: base64url({ alg: algorithm, typ: ACCESS_TOKEN_TYPE, kid }) };
    const now = Math.floor(Date.now() / 1000);
    const input = `${header.encoded}.${base64url({
      client_id: claims.clientId,
      client_rid: claims.clientRegistration,
      scope: claims.scope,
      kind: claims.subject.kind,
      cst: claims.credentialStamp,
      iss: issuer,
      aud: audience,
      sub: claims.subject.id,
      jti: randomUUID(),
      iat: now,
      exp: now + ttlSeconds,
    })}`;
    const token = `${input}.${(await signature(input, privateKey)).toString('base64url')}`;
    return { token, expiresIn: ttlSeconds };
  }

  async function verifyAccessToken(token: string): Promise<VerifiedAccessToken> {
    const key = token.slice(-CACHE_KEY_LENGTH);
    const known = verified.get(key);
    if (known?.token === token) {
      // jose's rule without clock tolerance: expired once the current second reaches `exp`.
      if (Date.now() < known.expiresAtMs && keys.verificationKey(known.kid)) return known.claims;
      verified.delete(key);
      throw new InvalidToken(Date.now() < known.expiresAtMs ? UNKNOWN_KEY : 'Token has expired');
    }
    // jose decodes leniently: the unused bits of a part's last character would make one token many.
    if (!token.split('.').every((part) => isCanonicalBase64url(part))) throw new InvalidToken(MALFORMED);
    let payload: Record<string, unknown>;
    let kid = '';
    try {
      // RFC 8725 §3.1: the algorithm is pinned, never taken from the token's header. The
      // `kid` only selects among our own trusted keys (§3.10): an unknown one is refused.
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          kid = header.kid ?? '';
          const key = await keys.findVerificationKey(kid);
          if (!key) throw new InvalidToken(UNKNOWN_KEY);
          return key;
        },
        {
          algorithms: [algorithm],
          issuer,
          audience,
          typ: ACCESS_TOKEN_TYPE,
          requiredClaims: ['sub', 'exp', 'iat', 'jti', 'client_id'],
        },
      ));
    } catch (error) {
      throw error instanceof InvalidToken ? error : new InvalidToken(reasonFor(error));
    }
    const { sub, client_id: clientId, client_rid: clientRegistration, scope, kind, exp, iat, cst } = payload;
    if (
      typeof sub !== 'string' ||
      typeof iat !== 'number' ||
      (clientRegistration !== undefined && typeof clientRegistration !== 'string') ||
      typeof clientId !== 'string' ||
      typeof scope !== 'string' ||
      !isSubjectKind(kind) ||
      (kind !== 'client' && typeof cst !== 'string')
    ) {
      throw new InvalidToken('Token claims are invalid');
    }
    // Frozen: the same object is handed out again for every later use of this token.
    const claims: VerifiedAccessToken = Object.freeze({
      subject: Object.freeze({ kind, id: sub }),
      clientId,
      ...(typeof clientRegistration === 'string' ? { clientRegistration } : {}),
      scope,
      issuedAt: iat,
      ...(typeof cst === 'string' ? { credentialStamp: cst } : {}),
    });
    if (typeof exp === 'number') {
      verified.set(key, { token, claims, kid, expiresAtMs: exp * 1000 });
    }
    return claims;
  }

  return { issueAccessToken, verifyAccessToken };
}

const UNKNOWN_KEY = 'Token signing key is not trusted';
const MALFORMED = 'Token is malformed';
/** Enough of a signature's base64url (6 bits a character) that two tokens never share it by chance. */
const CACHE_KEY_LENGTH = 32;

/** JSON (a member whose value is undefined is left out), then base64url without padding. */
function base64url(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * RFC 7518 §3.3 (RS*: RSASSA-PKCS1-v1_5) and §3.5 (PS*: RSASSA-PSS with MGF1 over the same
 * hash and a salt as long as the hash), signing on the thread pool.
 */
function signer(algorithm: SigningAlgorithm): (input: string, key: KeyObject) => Promise<Buffer> {
  const hash = `sha${algorithm.slice(2)}`;
  const pss = algorithm.startsWith('PS');
  return (input, key) =>
    new Promise((resolve, reject) => {
      sign(
        hash,
        Buffer.from(input, 'latin1'),
        pss
          ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
          : key,
        (error, signature) => (error ? reject(error) : resolve(signature)),
      );
    });
}

function isSubjectKind(value: unknown): value is TokenSubject['kind'] {
  return value === 'admin' || value === 'user' || value === 'client';
}

function reasonFor(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'Token has expired';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'Token signature is invalid';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'Token algorithm is not allowed';
  if (error instanceof errors.JWTClaimValidationFailed) return `Token ${error.claim} claim is invalid`;
  return MALFORMED;
}
