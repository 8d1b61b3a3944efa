import { createHash } from 'node:crypto';
import type { AccountKind } from '../../accounts/model.ts';
import type {
  RefreshTokenFamily,
  RefreshTokenGeneration,
  RefreshTokenRetry,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
} from '../../oauth/model.ts';
import type { RedisClient } from './connect.ts';
import { runScript, script } from './scripts.ts';
import { immediateWrites, type ScriptWrites } from './writes.ts';

/**
 * Refresh tokens in Redis: one small hash per family, however often it rotates, one for a
 * short while after each rotation, and one sorted set per account. Key layout (P = prefix,
 * default `rt:`):
 *
 *   P{familyId}        hash, PEXPIREAT its expiry:
 *                        g generation of the current token
 *                        m its MAC
 *                        s u live | r revoked
 *                        e expiry (ms), c client, k kind, u subject, sc scope, st stamp
 *   P{familyId}:r      hash, the last rotation's retry record, PEXPIREAT the end of its window
 *                      (the family's expiry while p is set):
 *                        m MAC of the token it replaced
 *                        x the successor, sealed under a key only that token gives
 *                        e end of the retry window (ms)
 *                        l the latest end of the window (ms), set by the rotation's first
 *                          answer: no retry moves the window past it
 *                        p while the last answer handing the successor out waits for the
 *                          replicas: its mark (a fresh MAC); the window has not started
 *   Ps:{account}       sorted set of the account's family ids scored by expiry, pruned of
 *                      expired families on every write, PEXPIREAT its latest score; the
 *                      tag is a 96-bit digest of kind and subject, shorter than both
 *
 * The `{...}` hash tags keep a family's two keys on one cluster slot, so each script runs on
 * one. Only MACs are stored, never a token: the random part a token needs is in no key.
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
 * What the presented token (generation ARGV[1], MAC ARGV[2]) is at ARGV[3] (ms): its state,
 * the family's fields (the grant from f[4]) and, for a retry, the retry record (r[2] the
 * sealed successor). A retry record whose answer is not confirmed yet has no window running,
 * unless an earlier answer set a limit and it has passed.
 */
const FIND = `
local function find()
  local now = tonumber(ARGV[3])
  local f = redis.call('HMGET', KEYS[1], 'g', 'm', 's', ${GRANT_FIELDS})
  if not f[1] or tonumber(f[9]) <= now then return 'unknown' end
  if f[3] == 'r' then return 'revoked' end
  local presented, current = tonumber(ARGV[1]), tonumber(f[1])
  if presented == current then
    if ARGV[2] == f[2] then return 'current', f end
    return 'unknown'
  end
  if presented > current then return 'unknown' end
  if presented == current - 1 then
    local r = redis.call('HMGET', KEYS[2], 'm', 'x', 'e', 'p', 'l')
    local waiting = r[4] and not (r[5] and tonumber(r[5]) <= now)
    if r[1] == ARGV[2] and (waiting or tonumber(r[3]) > now) then return 'retry', f, r end
  end
  return 'reused', f
end
local function reply(state, f, r)
  if not f then return {state} end
  return {state, f[4], f[5], f[6], f[7], f[8], f[9], r and r[2]}
end
`;

const INSPECT = `${FIND}
return reply(find())
`;

/**
 * The one write of a refresh, a compare-and-set: a current token is replaced by its
 * successor (ARGV[4] its MAC, ARGV[5] the family's new expiry) and kept for retries (sealed
 * successor ARGV[6], or '' for none, until ARGV[7], at the latest ARGV[9] for any retry);
 * anything else is answered as found, and an older generation revokes the family with that
 * verdict. A retry answered with the successor starts the window again (ARGV[7]), up to the
 * record's limit. With ARGV[8] set, the answer waits for the replicas: the record is marked
 * pending with ARGV[4] instead, and its window starts when CONFIRM_ANSWER says the answer
 * went out, so that no outage of the replicas, however long, turns the client's retries
 * into reuse; the first answer confirmed sets the limit.
 */
const ROTATE = `${FIND}
local state, f, r = find()
local pending = ARGV[8] ~= '' and ARGV[6] ~= ''
if state == 'current' then
  redis.call('HSET', KEYS[1], 'g', tonumber(ARGV[1]) + 1, 'm', ARGV[4], 'e', ARGV[5])
  redis.call('PEXPIREAT', KEYS[1], ARGV[5])
  if ARGV[6] == '' then
    redis.call('DEL', KEYS[2])
  elseif pending then
    redis.call('HSET', KEYS[2], 'm', ARGV[2], 'x', ARGV[6], 'e', ARGV[7], 'p', ARGV[4])
    redis.call('HDEL', KEYS[2], 'l')
    redis.call('PEXPIREAT', KEYS[2], ARGV[5])
  else
    redis.call('HSET', KEYS[2], 'm', ARGV[2], 'x', ARGV[6], 'e', ARGV[7], 'l', ARGV[9])
    redis.call('HDEL', KEYS[2], 'p')
    redis.call('PEXPIREAT', KEYS[2], ARGV[7])
  end
  return {'rotated'}
elseif state == 'retry' then
  -- Every branch writes, so that a WAIT after this script, on any connection, also covers
  -- the rotation this answer hands out.
  local limit = r[5] or ARGV[9]
  local ends = ARGV[7]
  if tonumber(limit) < tonumber(ends) then ends = limit end
  if pending then
    redis.call('HSET', KEYS[2], 'p', ARGV[4])
    redis.call('PEXPIREAT', KEYS[2], f[9])
  elseif ARGV[6] ~= '' and tonumber(ends) > tonumber(r[3]) then
    redis.call('HSET', KEYS[2], 'e', ends, 'l', limit)
    redis.call('PEXPIREAT', KEYS[2], ends)
  else
    redis.call('HSET', KEYS[2], 'x', r[2])
  end
elseif state == 'reused' then
  redis.call('HSET', KEYS[1], 's', 'r')
  redis.call('DEL', KEYS[2])
end
return reply(state, f, r)
`;

/**
 * Ends the wait of the answer marked pending with ARGV[1]: the retry window runs until
 * ARGV[2], never shortened and never past the record's limit. ARGV[3] says whether the answer
 * went out: the limit, were it the first, or '' for an answer that failed, whose mark goes
 * only once an earlier answer has set the limit: before that no client holds the successor,
 * and the client's retry must find it however long the replicas stay away. A later answer's
 * mark, or a later rotation, is left alone; but an answer that went out while a retry of the
 * same rotation (ARGV[4], the MAC of the token it replaced) had marked the record since still
 * sets the limit if none is set, so that the retry's failure, or its client giving up, cannot
 * keep the replaced token a retry for good.
 */
const CONFIRM_ANSWER = `
local r = redis.call('HMGET', KEYS[1], 'p', 'e', 'l', 'm')
if r[1] ~= ARGV[1] then
  if r[1] and not r[3] and ARGV[3] ~= '' and r[4] == ARGV[4] then
    redis.call('HSET', KEYS[1], 'l', ARGV[3])
  end
  return 0
end
local limit = r[3] or ARGV[3]
if limit == '' then return 0 end
local ends = ARGV[2]
if tonumber(limit) < tonumber(ends) then ends = limit end
if tonumber(r[2]) > tonumber(ends) then ends = r[2] end
redis.call('HDEL', KEYS[1], 'p')
redis.call('HSET', KEYS[1], 'e', ends, 'l', limit)
redis.call('PEXPIREAT', KEYS[1], ends)
return 1
`;

/** Marks the family revoked for the rest of its life; returns its account to unlist it from. */
const REVOKE_FAMILY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 's', 'r')
redis.call('DEL', KEYS[2])
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
  rotate: script(ROTATE),
  confirmAnswer: script(CONFIRM_ANSWER),
  revokeFamily: script(REVOKE_FAMILY),
  indexFamily: script(INDEX_FAMILY),
};

export class RedisRefreshTokenStore implements RefreshTokenStore {
  readonly #redis: RedisClient;
  /** Where every change that an answer depends on goes: acknowledged by replicas, or not. */
  readonly #writes: ScriptWrites;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(
    redis: RedisClient,
    options: { prefix?: string; now?: () => number; writes?: ScriptWrites } = {},
  ) {
    this.#redis = redis;
    this.#writes = options.writes ?? immediateWrites(redis);
    this.#prefix = options.prefix ?? 'rt:';
    this.#now = options.now ?? Date.now;
  }

  async create(grant: RefreshTokenFamily, first: RefreshTokenGeneration): Promise<boolean> {
    // Index the family under its account first: if the second step fails, the set only lists
    // a family that does not exist, whereas the other order could leave one revokeSubject misses.
    await this.#index(grant.accountKind, grant.subject, grant.familyId, grant.expiresAt);
    const created = await this.#writes.run(
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
    // The caller's clock decides expiry and retry windows, as in the memory store; Redis's
    // own expiry only frees the memory.
    const reply = await runScript(this.#redis, SCRIPTS.inspect, this.#familyKeys(familyId), [
      presented.generation,
      presented.mac,
      this.#now(),
    ]);
    return stateOf(familyId, reply);
  }

  async rotate(
    grant: RefreshTokenFamily,
    presented: RefreshTokenGeneration,
    successor: RefreshTokenGeneration,
    retry?: RefreshTokenRetry,
  ): Promise<RefreshTokenRotation> {
    // Behind replicas an answer counts once they confirm it, so the retry window starts then
    // (below), as long as it lasts; the successor's MAC, fresh each time, marks this answer.
    const startedAt = this.#now();
    const pending = retry && this.#writes.acknowledged ? successor.mac : '';
    // Both in one batch, the index sent first: were only the rotation to land, the refresh
    // failed, and the client's retry finds the rotation and lists the family again.
    const [, reply] = await Promise.all([
      this.#index(grant.accountKind, grant.subject, grant.familyId, grant.expiresAt),
      this.#writes.run(SCRIPTS.rotate, this.#familyKeys(grant.familyId), [
        presented.generation,
        presented.mac,
        this.#now(),
        successor.mac,
        grant.expiresAt,
        retry?.sealedSuccessor ?? '',
        retry?.until ?? 0,
        pending,
        retry?.limit ?? 0,
      ]),
    ]).catch(async (error: unknown) => {
      // Not answered (the replicas did not confirm in time, or the index failed): a mark this
      // answer may have set would keep the replaced token a retry for good.
      if (pending && retry)
        await this.#unmark(grant.familyId, pending, this.#now() + (retry.until - startedAt));
      throw error;
    });
    const found = Array.isArray(reply) && reply[0] === 'rotated' ? null : stateOf(grant.familyId, reply);
    if (found?.state === 'current') throw new Error('The rotate script left a current token unrotated');
    if (pending && retry && (!found || found.state === 'retry'))
      await this.#confirmAnswer(
        grant.familyId,
        presented.mac,
        pending,
        this.#now() + (retry.until - startedAt),
        this.#now() + (retry.limit - startedAt),
      );
    if (!found) return { state: 'rotated' };
    if (found.state === 'reused')
      await this.#unindex(found.grant.accountKind, found.grant.subject, grant.familyId);
    return found;
  }

  /**
   * Starts the window of an answer the replicas confirmed, `limit` the latest end should it
   * be the rotation's first. Not waited for by them: lost, the record stays pending, so the
   * token it replaced stays a retry until its successor is used or the limit an earlier
   * answer set has passed.
   */
  async #confirmAnswer(
    familyId: string,
    replaced: string,
    mark: string,
    until: number,
    limit: number,
  ): Promise<void> {
    const [, retryKey] = this.#familyKeys(familyId);
    await runScript(this.#redis, SCRIPTS.confirmAnswer, [retryKey], [mark, until, limit, replaced]).catch(
      () => undefined,
    );
  }

  /**
   * Starts the window of an answer that did not go out, when an earlier one did: the mark of
   * the failed answer would otherwise keep the replaced token a retry for good. Best effort,
   * as the confirmation.
   */
  async #unmark(familyId: string, mark: string, until: number): Promise<void> {
    const [, retryKey] = this.#familyKeys(familyId);
    await runScript(this.#redis, SCRIPTS.confirmAnswer, [retryKey], [mark, until, '']).catch(() => undefined);
  }

  async revokeFamily(familyId: string): Promise<void> {
    const account = await this.#writes.run(SCRIPTS.revokeFamily, this.#familyKeys(familyId), []);
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
    await this.#writes.run(
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

  /** The family's record and its retry record: one hash tag, so one cluster slot. */
  #familyKeys(familyId: string): [string, string] {
    const family = this.#familyKey(familyId);
    return [family, `${family}:r`];
  }

  #subjectKey(kind: AccountKind, subject: string): string {
    const account = createHash('sha256').update(`${kind}:${subject}`).digest('base64url').slice(0, 16);
    return `${this.#prefix}s:{${account}}`;
  }
}

/** The state a FIND reply names, with the grant from its fields. */
function stateOf(familyId: string, reply: unknown): RefreshTokenState {
  if (!Array.isArray(reply)) throw new Error('Unexpected reply from a refresh-token script');
  const [state, clientId, accountKind, subject, scope, credentialStamp, expiresAt, sealed] =
    reply as string[];
  if (state === 'revoked') return { state };
  if (state !== 'current' && state !== 'retry' && state !== 'reused') return { state: 'unknown' };
  const grant: RefreshTokenFamily = {
    familyId,
    clientId: String(clientId),
    accountKind: accountKind as AccountKind,
    subject: String(subject),
    scope: String(scope),
    credentialStamp: String(credentialStamp),
    expiresAt: Number(expiresAt),
  };
  return state === 'retry' ? { state, grant, sealedSuccessor: String(sealed) } : { state, grant };
}
