import { createHash } from 'node:crypto';
import type {
  AccountKind,
  ConsumeResult,
  RefreshTokenGeneration,
  RefreshTokenGrant,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
} from '../types.ts';
import type { RedisClient } from './connect.ts';
import { runScript, script } from './scripts.ts';

/**
 * Refresh tokens in Redis: one small hash per family, however often it rotates, and one
 * sorted set per account. Key layout (P = prefix, default `rt:`):
 *
 *   P{familyId}        hash, PEXPIREAT its expiry:
 *                        g generation of the current token
 *                        m its MAC
 *                        s u unused | c consumed | r revoked
 *                        a the attempt holding it while c
 *                        l lease expiry (ms) while c
 *                        e expiry (ms), c client, k kind, u subject, sc scope, st stamp
 *   Ps:{account}       sorted set of the account's family ids scored by expiry, pruned of
 *                      expired families on every write, PEXPIREAT its latest score; the
 *                      tag is a 96-bit digest of kind and subject, shorter than both
 *
 * The `{...}` hash tags keep each script on one cluster slot. Only MACs are stored, never a
 * token: the random part a token needs is in no key.
 */

const GRANT_FIELDS = "'c', 'k', 'u', 'sc', 'st', 'e'";

/** Starts a family unless one with its id exists (a revoked one included). */
const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'g', 0, 'm', ARGV[1], 's', 'u', 'e', ARGV[2],
  'c', ARGV[3], 'k', ARGV[4], 'u', ARGV[5], 'sc', ARGV[6], 'st', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`;

/**
 * The verdict on a presented token, atomically: so of two concurrent consumers exactly one
 * wins, and an older generation revokes the family in the same step as it is recognised.
 */
const CONSUME = `
local f = redis.call('HMGET', KEYS[1], 'g', 'm', 's', 'l', ${GRANT_FIELDS})
local now = tonumber(ARGV[5])
if not f[1] or tonumber(f[10]) <= now then return {'unknown'} end
if f[3] == 'r' then return {'revoked'} end
local presented, current = tonumber(ARGV[1]), tonumber(f[1])
if presented < current then
  redis.call('HSET', KEYS[1], 's', 'r')
  redis.call('HDEL', KEYS[1], 'a', 'l')
  return {'reused', f[5], f[6], f[7], f[8], f[9], f[10]}
end
if presented > current or ARGV[2] ~= f[2] then return {'unknown'} end
if f[3] == 'c' and tonumber(f[4]) > now then return {'in-flight'} end
redis.call('HSET', KEYS[1], 's', 'c', 'a', ARGV[3], 'l', ARGV[4])
return {'consumed', f[5], f[6], f[7], f[8], f[9], f[10]}
`;

/** What CONSUME would find, without changing anything. */
const INSPECT = `
local f = redis.call('HMGET', KEYS[1], 'g', 'm', 's', 'l', ${GRANT_FIELDS})
local now = tonumber(ARGV[3])
if not f[1] or tonumber(f[10]) <= now then return {'unknown'} end
if f[3] == 'r' then return {'revoked'} end
local presented, current = tonumber(ARGV[1]), tonumber(f[1])
if presented < current then return {'reused', f[5], f[6], f[7], f[8], f[9], f[10]} end
if presented > current or ARGV[2] ~= f[2] then return {'unknown'} end
if f[3] == 'c' and tonumber(f[4]) > now then return {'in-flight'} end
return {'current', f[5], f[6], f[7], f[8], f[9], f[10]}
`;

/** Installs the successor, only while the attempt still holds the family. */
const ROTATE = `
local f = redis.call('HMGET', KEYS[1], 's', 'a')
if f[1] ~= 'c' or f[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', 'u', 'g', ARGV[2], 'm', ARGV[3], 'e', ARGV[4])
redis.call('HDEL', KEYS[1], 'a', 'l')
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1
`;

/**
 * Gives back what the attempt took: its consume, or its rotation while the successor is
 * unused. The caller brings the MAC to restore (it holds the token it presented), so no
 * record keeps a replaced MAC for a rollback that is almost never needed.
 */
const RELEASE = `
local f = redis.call('HMGET', KEYS[1], 's', 'a', 'g', 'm')
if f[1] == 'c' and f[2] == ARGV[1] then
  redis.call('HSET', KEYS[1], 's', 'u')
elseif f[1] == 'u' and ARGV[2] and f[4] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'g', tonumber(f[3]) - 1, 'm', ARGV[3])
else
  return 0
end
redis.call('HDEL', KEYS[1], 'a', 'l')
return 1
`;

/** Marks the family revoked for the rest of its life; returns its account to unlist it from. */
const REVOKE_FAMILY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 's', 'r')
redis.call('HDEL', KEYS[1], 'a', 'l')
return redis.call('HMGET', KEYS[1], 'k', 'u')
`;

/**
 * Lists a family under its account with its expiry (never lowering it), drops the families
 * that have expired, and keeps the set alive as long as its latest family.
 */
const INDEX_FAMILY = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
`;

const SCRIPTS = {
  create: script(CREATE),
  inspect: script(INSPECT),
  consume: script(CONSUME),
  rotate: script(ROTATE),
  release: script(RELEASE),
  revokeFamily: script(REVOKE_FAMILY),
  indexFamily: script(INDEX_FAMILY),
};

export class RedisRefreshTokenStore implements RefreshTokenStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(redis: RedisClient, options: { prefix?: string; now?: () => number } = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'rt:';
    this.#now = options.now ?? Date.now;
  }

  async create(grant: RefreshTokenGrant, first: RefreshTokenGeneration): Promise<boolean> {
    // Index the family under its account first: if the second step fails, the set only lists
    // a family that does not exist, whereas the other order could leave one revokeSubject misses.
    await this.#index(grant.accountKind, grant.subject, grant.familyId, grant.expiresAt);
    const created = await runScript(
      this.#redis,
      SCRIPTS.create,
      [this.#familyKey(grant.familyId)],
      [
        first.mac,
        grant.expiresAt,
        grant.clientId,
        grant.accountKind,
        grant.subject,
        grant.scope,
        grant.credentialStamp,
      ],
    );
    return created === 1;
  }

  async inspect(familyId: string, presented: RefreshTokenGeneration): Promise<RefreshTokenState> {
    const reply = await runScript(
      this.#redis,
      SCRIPTS.inspect,
      [this.#familyKey(familyId)],
      [presented.generation, presented.mac, this.#now()],
    );
    if (!Array.isArray(reply)) throw new Error('Unexpected reply from the inspect script');
    const [state, ...fields] = reply as string[];
    if (state === 'current' || state === 'reused') return { state, grant: grantOf(familyId, fields) };
    if (state === 'revoked' || state === 'in-flight') return { state };
    return { state: 'unknown' };
  }

  async consume(
    familyId: string,
    presented: RefreshTokenGeneration,
    hold: { attempt: string; leaseUntil: number },
  ): Promise<ConsumeResult> {
    // The caller's clock decides expiry and leases, as in the memory store; Redis's own
    // expiry only frees the memory.
    const reply = await runScript(
      this.#redis,
      SCRIPTS.consume,
      [this.#familyKey(familyId)],
      [presented.generation, presented.mac, hold.attempt, hold.leaseUntil, this.#now()],
    );
    if (!Array.isArray(reply)) throw new Error('Unexpected reply from the consume script');
    const [outcome, ...fields] = reply as string[];
    if (outcome === 'consumed' || outcome === 'reused') {
      const grant = grantOf(familyId, fields);
      if (outcome === 'reused') await this.#unindex(grant.accountKind, grant.subject, familyId);
      return { outcome, grant };
    }
    if (outcome === 'revoked' || outcome === 'in-flight') return { outcome };
    return { outcome: 'unknown' };
  }

  async rotate(
    grant: RefreshTokenGrant,
    attempt: string,
    successor: RefreshTokenGeneration,
  ): Promise<boolean> {
    // Both in one round trip, the index sent first: were only the rotation to land, the
    // successor was never delivered (the refresh failed), so nobody holds a token the
    // index could miss.
    const [, rotated] = await Promise.all([
      this.#index(grant.accountKind, grant.subject, grant.familyId, grant.expiresAt),
      runScript(
        this.#redis,
        SCRIPTS.rotate,
        [this.#familyKey(grant.familyId)],
        [attempt, successor.generation, successor.mac, grant.expiresAt],
      ),
    ]);
    return rotated === 1;
  }

  async release(familyId: string, attempt: string, rotation?: RefreshTokenRotation): Promise<void> {
    const args = rotation ? [attempt, rotation.successorMac, rotation.previousMac] : [attempt];
    await runScript(this.#redis, SCRIPTS.release, [this.#familyKey(familyId)], args);
  }

  async revokeFamily(familyId: string): Promise<void> {
    const account = await runScript(this.#redis, SCRIPTS.revokeFamily, [this.#familyKey(familyId)], []);
    if (!Array.isArray(account)) return;
    const [kind, subject] = account as [AccountKind, string];
    await this.#unindex(kind, subject, familyId);
  }

  async revokeSubject(accountKind: AccountKind, subject: string): Promise<void> {
    const key = this.#subjectKey(accountKind, subject);
    const families = await this.#redis.zrange(key, '0', '-1');
    // One script per family: a family's keys share a slot, different families need not.
    await Promise.all(families.map((familyId) => this.revokeFamily(familyId)));
    // Unlist only what was revoked (or had expired): a family listed meanwhile (a fresh login) stays.
    if (families.length > 0) await this.#redis.zrem(key, ...families);
  }

  async #index(kind: AccountKind, subject: string, familyId: string, expiresAt: number): Promise<void> {
    await runScript(
      this.#redis,
      SCRIPTS.indexFamily,
      [this.#subjectKey(kind, subject)],
      [familyId, expiresAt, this.#now()],
    );
  }

  async #unindex(kind: AccountKind, subject: string, familyId: string): Promise<void> {
    await this.#redis.zrem(this.#subjectKey(kind, subject), familyId);
  }

  #familyKey(familyId: string): string {
    return `${this.#prefix}{${familyId}}`;
  }

  #subjectKey(kind: AccountKind, subject: string): string {
    const account = createHash('sha256').update(`${kind}:${subject}`).digest('base64url').slice(0, 16);
    return `${this.#prefix}s:{${account}}`;
  }
}

/** The grant a script returned, its fields in the order of GRANT_FIELDS. */
function grantOf(familyId: string, fields: string[]): RefreshTokenGrant {
  const [clientId, accountKind, subject, scope, credentialStamp, expiresAt] = fields;
  return {
    familyId,
    clientId: String(clientId),
    accountKind: accountKind as AccountKind,
    subject: String(subject),
    scope: String(scope),
    credentialStamp: String(credentialStamp),
    expiresAt: Number(expiresAt),
  };
}
