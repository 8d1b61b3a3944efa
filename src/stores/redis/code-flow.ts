import type { AuthorizationCodeGrant, CodeFlowStore } from '../../oauth/model.ts';
import type { RedisClient } from './connect.ts';
import { runScript, script } from './scripts.ts';

/**
 * The authorization code flow's records in Redis. Key layout (P = prefix, default `authz:`):
 *
 *   Pu:<id>       a used sign-in form value, PEXPIREAT the value's expiry
 *   Pc:<digest>   hash {grant: JSON, exp: ms, used: 0 | 1, by: the attempt that used it,
 *                 reused: 0 | 1}, PEXPIREAT grant.expiresAt (`used` as earlier versions
 *                 kept it, so that one running beside this one reads a used code as used)
 *
 * Every operation touches one key, so any of them may live in any Redis Cluster slot. The
 * caller's clock decides expiry, as in the memory store; Redis's own expiry frees the memory.
 */

const SAVE_CODE = script(`
redis.call('HSET', KEYS[1], 'grant', ARGV[1], 'exp', ARGV[2], 'used', '0', 'reused', '0')
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`);

/** Marks a code used by attempt ARGV[2]; a code already used is marked as presented again. */
const CONSUME = script(`
local t = redis.call('HMGET', KEYS[1], 'exp', 'used')
if not t[1] or tonumber(t[1]) <= tonumber(ARGV[1]) then return 'unknown' end
if t[2] == '1' then
  redis.call('HSET', KEYS[1], 'reused', '1')
  return 'reused'
end
redis.call('HSET', KEYS[1], 'used', '1', 'by', ARGV[2])
return 'consumed'
`);

/** Marks a code unused again that attempt ARGV[1] used, unless it was presented again since. */
const RELEASE = script(`
local t = redis.call('HMGET', KEYS[1], 'used', 'by', 'reused')
if t[1] == '1' and t[2] == ARGV[1] and t[3] == '0' then
  redis.call('HSET', KEYS[1], 'used', '0')
  redis.call('HDEL', KEYS[1], 'by')
end
return 1
`);

export class RedisCodeFlowStore implements CodeFlowStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(redis: RedisClient, options: { prefix?: string; now?: () => number } = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'authz:';
    this.#now = options.now ?? Date.now;
  }

  async useOnce(id: string, expiresAt: number): Promise<boolean> {
    return (await this.#redis.set(`${this.#prefix}u:${id}`, '1', 'PXAT', expiresAt, 'NX')) === 'OK';
  }

  async saveCode(digest: string, grant: AuthorizationCodeGrant): Promise<void> {
    await runScript(
      this.#redis,
      SAVE_CODE,
      [this.#codeKey(digest)],
      [JSON.stringify(grant), grant.expiresAt],
    );
  }

  async findCode(digest: string): Promise<AuthorizationCodeGrant | null> {
    const [grant, exp] = await this.#redis.hmget(this.#codeKey(digest), 'grant', 'exp');
    if (!grant || !exp || Number(exp) <= this.#now()) return null;
    return JSON.parse(grant) as AuthorizationCodeGrant;
  }

  async consumeCode(digest: string, attempt: string): Promise<'consumed' | 'reused' | 'unknown'> {
    const outcome = await runScript(this.#redis, CONSUME, [this.#codeKey(digest)], [this.#now(), attempt]);
    return outcome === 'consumed' || outcome === 'reused' ? outcome : 'unknown';
  }

  async releaseCode(digest: string, attempt: string): Promise<void> {
    await runScript(this.#redis, RELEASE, [this.#codeKey(digest)], [attempt]);
  }

  async wasReused(digest: string): Promise<boolean> {
    const [exp, reused] = await this.#redis.hmget(this.#codeKey(digest), 'exp', 'reused');
    return Boolean(exp) && Number(exp) > this.#now() && reused === '1';
  }

  #codeKey(digest: string): string {
    return `${this.#prefix}c:${digest}`;
  }
}
