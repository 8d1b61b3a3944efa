import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { AccountKind, ConsumeResult, RefreshTokenGrant, RefreshTokenStore } from '../types.ts';

/**
 * Refresh tokens in Redis. Key layout (P = prefix, default `rt:`):
 *
 *   P{familyId}:t:<digest>   hash {grant: JSON, exp: ms, used: 0 unused | 1 consumed | 2 rotated,
 *                            attempt: the consume holding it while used is 1},
 *                            PEXPIREAT grant.expiresAt
 *   P{familyId}:exp          the family's latest expiry (ms), expiring at that moment
 *   P{familyId}:revoked      revocation marker, expiring with the family's latest token;
 *                            no token is saved into a family while it exists
 *   Ps:{kind:subject}        set of family ids issued to one account
 *
 * The `{...}` hash tags put all of a family's keys in one cluster slot, so each family
 * script touches only same-slot keys. Only HMAC digests are stored, never a raw token.
 */

/** Marks a token used, atomically, so of two concurrent consumers exactly one wins. */
const CONSUME = `
local t = redis.call('HMGET', KEYS[1], 'grant', 'exp', 'used')
if not t[1] or tonumber(t[2]) <= tonumber(ARGV[1]) then return {'unknown'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'revoked'} end
if t[3] == '1' then return {'in-flight'} end
if t[3] == '2' then return {'reused', t[1]} end
redis.call('HSET', KEYS[1], 'used', '1', 'attempt', ARGV[2])
return {'consumed', t[1]}
`;

/** Makes a consumed token unused again, only while the same attempt still holds it. */
const RELEASE = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local t = redis.call('HMGET', KEYS[1], 'used', 'attempt')
if t[1] ~= '1' or t[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'used', '0')
redis.call('HDEL', KEYS[1], 'attempt')
return 1
`;

/**
 * Stores an unused token and raises the family's expiry to cover it, and marks the token it
 * replaces (KEYS[4], when given) rotated; nothing goes into a revoked family.
 */
const SAVE = `
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('HSET', KEYS[4], 'used', '2') end
redis.call('HSET', KEYS[1], 'grant', ARGV[1], 'exp', ARGV[2], 'used', '0')
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
if tonumber(ARGV[2]) > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('PEXPIREAT', KEYS[2], ARGV[2])
end
return 1
`;

/** The marker lives as long as the family's longest-lived token; a family with no live token needs none. */
const REVOKE_FAMILY = `
local exp = redis.call('GET', KEYS[1])
if exp then
  redis.call('SET', KEYS[2], '1')
  redis.call('PEXPIREAT', KEYS[2], exp)
end
return 1
`;

/** Adds a family to the account's set and keeps the set alive as long as its latest grant. */
const INDEX_SUBJECT = `
redis.call('SADD', KEYS[1], ARGV[1])
local now = redis.call('TIME')
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 or tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl < tonumber(ARGV[2]) then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
return 1
`;

interface Script {
  lua: string;
  sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

const SCRIPTS = {
  consume: script(CONSUME),
  release: script(RELEASE),
  save: script(SAVE),
  revokeFamily: script(REVOKE_FAMILY),
  indexSubject: script(INDEX_SUBJECT),
};

export class RedisRefreshTokenStore implements RefreshTokenStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(redis: Redis, options: { prefix?: string; now?: () => number } = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'rt:';
    this.#now = options.now ?? Date.now;
  }

  async save(tokenDigest: string, grant: RefreshTokenGrant, replacesDigest?: string): Promise<boolean> {
    // Index the family under its account first: if the second step fails, the set only holds
    // a family with no token, whereas the other order could leave a token revokeSubject misses.
    await this.#run(
      SCRIPTS.indexSubject,
      [this.#subjectKey(grant.accountKind, grant.subject)],
      [grant.familyId, grant.expiresAt],
    );
    const family = this.#familyKey(grant.familyId);
    const saved = await this.#run(
      SCRIPTS.save,
      [
        `${family}:t:${tokenDigest}`,
        `${family}:exp`,
        `${family}:revoked`,
        ...(replacesDigest === undefined ? [] : [`${family}:t:${replacesDigest}`]),
      ],
      [JSON.stringify(grant), grant.expiresAt],
    );
    return saved === 1;
  }

  async consume(familyId: string, tokenDigest: string): Promise<ConsumeResult> {
    const family = this.#familyKey(familyId);
    // The caller's clock decides expiry, as in the memory store; Redis's own expiry only
    // frees the memory. A wrong familyId names a key that does not exist: `unknown`.
    const attempt = randomUUID();
    const reply = await this.#run(
      SCRIPTS.consume,
      [`${family}:t:${tokenDigest}`, `${family}:revoked`],
      [this.#now(), attempt],
    );
    if (!Array.isArray(reply)) throw new Error('Unexpected reply from the consume script');
    const [outcome, grantJson] = reply as [string, string | undefined];
    if ((outcome === 'consumed' || outcome === 'reused') && typeof grantJson === 'string') {
      const grant = JSON.parse(grantJson) as RefreshTokenGrant;
      return outcome === 'consumed' ? { outcome, grant, attempt } : { outcome, grant };
    }
    if (outcome === 'revoked' || outcome === 'in-flight') return { outcome };
    return { outcome: 'unknown' };
  }

  async release(familyId: string, tokenDigest: string, attempt: string): Promise<void> {
    const family = this.#familyKey(familyId);
    await this.#run(SCRIPTS.release, [`${family}:t:${tokenDigest}`, `${family}:revoked`], [attempt]);
  }

  async revokeFamily(familyId: string): Promise<void> {
    const family = this.#familyKey(familyId);
    await this.#run(SCRIPTS.revokeFamily, [`${family}:exp`, `${family}:revoked`], []);
  }

  async revokeSubject(accountKind: AccountKind, subject: string): Promise<void> {
    const key = this.#subjectKey(accountKind, subject);
    const families = await this.#redis.smembers(key);
    // One script per family: a family's keys share a slot, different families need not.
    await Promise.all(families.map((familyId) => this.revokeFamily(familyId)));
    // Remove only what was revoked: a family indexed meanwhile (a fresh login) stays listed.
    if (families.length > 0) await this.#redis.srem(key, ...families);
  }

  #familyKey(familyId: string): string {
    return `${this.#prefix}{${familyId}}`;
  }

  #subjectKey(kind: AccountKind, subject: string): string {
    return `${this.#prefix}s:{${kind}:${subject}}`;
  }

  /** EVALSHA, falling back to EVAL once when the server lost its script cache (e.g. a restart). */
  async #run(s: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return this.#redis.eval(s.lua, keys.length, ...keys, ...args);
    }
  }
}
