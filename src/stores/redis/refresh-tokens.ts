import { createHash, randomInt } from 'node:crypto';
import type { AccountKind } from '../../accounts/model.ts';
import type { RefreshFamilyRecord, RefreshFamilyRecords, VersionedFamilyRecord } from '../../oauth/model.ts';
import { VersionedRefreshTokenStore } from '../../oauth/versioned-refresh-tokens.ts';
import type { RedisClient } from './connect.ts';
import { runScript, script } from './scripts.ts';
import { immediateWrites, type ScriptWrites } from './writes.ts';

/**
 * Refresh-token families in Redis, as versioned records: a read, and one generic
 * compare-and-set script; the rules are the OAuth domain's (`refresh-family.ts`). One small
 * string per family, however often it rotates, one for a short while after each rotation,
 * and one sorted set per account. Key layout (P = prefix, default `rt:`):
 *
 *   P{familyId}     JSON array, PEXPIREAT the family's expiry: version, generation of the
 *                   current token, its MAC, 1 if revoked, expiry (ms), client, account kind,
 *                   subject, scope, credential stamp, until when the account lists it (ms)
 *   P{familyId}:r   JSON array, the last rotation's retry record: MAC of the token it
 *                   replaced, the successor sealed under a key only that token gives, end of
 *                   the window (ms), its latest end (0: not yet set), the mark of an answer
 *                   waiting for the replicas ('' for none); PEXPIREAT the end of its window,
 *                   or the family's expiry while an answer waits
 *   Ps:{account}    sorted set of the account's family ids, each scored with when it may
 *                   be dropped (its expiry and some more: LISTING_SLACK), pruned of those
 *                   past it on every write, PEXPIREAT its latest score; the tag is a 96-bit
 *                   digest of kind and subject, shorter than both
 *
 * Strings, not hashes: the sealed successor is longer than a hash's compact encoding takes
 * (64 bytes), so as a hash the retry record took about twice the memory (512 bytes against
 * about 300 measured with MEMORY USAGE); the family's string is the size its compact hash
 * was (about 264 bytes), and both are read with one MGET. The `{...}` hash tags keep a
 * family's two keys on one cluster slot, so one command reads both and one script writes
 * both. Only MACs are stored, never a token.
 */

/**
 * The compare-and-set of a versioned pair of keys: while the version that starts KEYS[1]'s
 * JSON array is ARGV[1] (0: no key, or a family an earlier version kept as a hash), KEYS[1]
 * becomes ARGV[2] until ARGV[3] (ms), and KEYS[2] becomes ARGV[4] until ARGV[5], or goes
 * when ARGV[4] is ''. Lost with ARGV[6] set, it writes the stored value again, unchanged, so
 * that a WAIT after it also covers what won.
 */
const COMPARE_AND_SET = `
local stored = redis.pcall('GET', KEYS[1])
local version = 0
if type(stored) == 'string' then version = tonumber(string.match(stored, '^%[(%d+),')) end
if version ~= tonumber(ARGV[1]) then
  if type(stored) == 'string' and ARGV[6] ~= '' then redis.call('SET', KEYS[1], stored, 'KEEPTTL') end
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
if ARGV[4] == '' then redis.call('DEL', KEYS[2])
else redis.call('SET', KEYS[2], ARGV[4], 'PXAT', ARGV[5]) end
return 1
`;

/**
 * Lists a family under its account until ARGV[2] (never earlier than it was), drops the
 * families listed until a time now past, and keeps the set alive as long as its latest one.
 */
const INDEX_FAMILY = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
`;

/**
 * A rotation moves a family's expiry on, and the account must list the family until then, or
 * revoking the account's sessions would miss it. Listed only until its expiry, the family's
 * listing would be written again by every rotation: one more script each, and in a Cluster a
 * write to another shard with a WAIT of its own there. So a family is listed for an eighth
 * of its remaining lifetime beyond its expiry, and a rotation writes the listing again only
 * once the new expiry has passed that: once per eighth of a lifetime of refreshing.
 */
const LISTING_SLACK = 1 / 8;

const SCRIPTS = { compareAndSet: script(COMPARE_AND_SET), indexFamily: script(INDEX_FAMILY) };

/** A family's key as stored: version, then the record's fields in a fixed order. */
type StoredFamily = [
  number,
  number,
  string,
  0 | 1,
  number,
  string,
  AccountKind,
  string,
  string,
  string,
  number?,
];
/** A retry record as stored: 0 for no limit, '' for no answer waiting. */
type StoredRetry = [string, string, number, number, string];

/** The families' records in Redis, read and compare-and-set; see the key layout above. */
class RedisFamilyRecords implements RefreshFamilyRecords {
  readonly #redis: RedisClient;
  readonly #writes: ScriptWrites;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(redis: RedisClient, writes: ScriptWrites, prefix: string, now: () => number) {
    this.#redis = redis;
    this.#writes = writes;
    this.#prefix = prefix;
    this.#now = now;
  }

  get acknowledged(): boolean {
    return this.#writes.acknowledged;
  }

  async read(familyId: string): Promise<VersionedFamilyRecord | null> {
    const keys = this.#familyKeys(familyId);
    const [family, retry] = await this.#redis.mget(...keys);
    if (family) return decode(familyId, family, retry ?? null);
    return this.#readEarlierLayout(familyId, keys);
  }

  /**
   * A family that a version before the versioned records kept, as two hashes: read as
   * version 0, which its first write replaces, so that an upgrade signs nobody out. Asked
   * only when no string is there (a family unknown or expired costs a second round trip).
   */
  async #readEarlierLayout(
    familyId: string,
    [familyKey, retryKey]: [string, string],
  ): Promise<VersionedFamilyRecord | null> {
    const hashes = await Promise.all([this.#redis.hgetall(familyKey), this.#redis.hgetall(retryKey)]).catch(
      (error: unknown) => {
        // Written as a string since the first read: read that.
        if (error instanceof Error && error.message.startsWith('WRONGTYPE')) return undefined;
        throw error;
      },
    );
    if (!hashes) return this.read(familyId);
    const [family, retry] = hashes;
    return family.g === undefined ? null : decodeEarlierLayout(familyId, family, retry);
  }

  /**
   * When the family would outlive its listing, the account lists it for longer first, and
   * the record, which notes until when, is written only once that counts: a listing lost
   * (another shard of a Cluster, down or failing over) fails the write before the record
   * says the family is listed, so the client's retry lists it again.
   */
  async write(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined> {
    const { familyId, accountKind, subject, expiresAt } = record.family;
    const listed = base?.listedUntil ?? 0;
    // A revoked family is unlisted below, and its record says so.
    const listedUntil = record.revoked ? 0 : this.#listingFor(expiresAt, listed);
    if (listedUntil > listed) await this.#index(accountKind, subject, familyId, listedUntil);
    const stored = this.#stored(record, listedUntil);
    const written = await this.#writes.run(
      SCRIPTS.compareAndSet,
      this.#familyKeys(familyId),
      this.#casArgs(stored, base, true),
    );
    if (written === 1 && record.revoked)
      await this.#redis.zrem(this.#subjectKey(accountKind, subject), familyId);
    return written === 1 ? stored : undefined;
  }

  async amend(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined> {
    const stored = this.#stored(record, base?.listedUntil ?? 0);
    const keys = this.#familyKeys(record.family.familyId);
    const args = this.#casArgs(stored, base, false);
    return (await runScript(this.#redis, SCRIPTS.compareAndSet, keys, args)) === 1 ? stored : undefined;
  }

  async unlist(accountKind: AccountKind, subject: string, familyIds: readonly string[]): Promise<void> {
    await this.#redis.zrem(this.#subjectKey(accountKind, subject), ...familyIds);
  }

  familiesOf(accountKind: AccountKind, subject: string): Promise<string[]> {
    return this.#redis.zrange(this.#subjectKey(accountKind, subject), '0', '-1');
  }

  /** Until when the account must list a family that expires at `expiresAt`: as listed, or longer. */
  #listingFor(expiresAt: number, listed: number): number {
    if (listed >= expiresAt) return listed;
    return Math.ceil(expiresAt + Math.max(0, expiresAt - this.#now()) * LISTING_SLACK);
  }

  /** The record as it is to be stored: under a new version, listed until `listedUntil`. */
  #stored(record: RefreshFamilyRecord, listedUntil: number): VersionedFamilyRecord {
    return { record, version: newVersion(), ...(listedUntil > 0 && { listedUntil }) };
  }

  /**
   * The script's arguments to store `next` in place of `base`. A retry record lives until its
   * window ends, or with the family while an answer waits; one past its window is dropped.
   */
  #casArgs(
    { record, version: next, listedUntil }: VersionedFamilyRecord,
    base: VersionedFamilyRecord | null,
    cover: boolean,
  ): (string | number)[] {
    const { family, current, revoked, retry } = record;
    const stored: StoredFamily = [
      next,
      current.generation,
      current.mac,
      revoked ? 1 : 0,
      family.expiresAt,
      family.clientId,
      family.accountKind,
      family.subject,
      family.scope,
      family.credentialStamp,
    ];
    if (listedUntil !== undefined) stored.push(listedUntil);
    const retryExpiry = retry?.pending === undefined ? (retry?.until ?? 0) : family.expiresAt;
    const keep = retry && retryExpiry > this.#now();
    const storedRetry: StoredRetry | undefined = keep
      ? [retry.replacedMac, retry.sealedSuccessor, retry.until, retry.limit ?? 0, retry.pending ?? '']
      : undefined;
    return [
      base?.version ?? 0,
      JSON.stringify(stored),
      family.expiresAt,
      storedRetry ? JSON.stringify(storedRetry) : '',
      retryExpiry,
      cover && this.#writes.acknowledged ? 1 : '',
    ];
  }

  async #index(kind: AccountKind, subject: string, familyId: string, listedUntil: number): Promise<void> {
    await this.#writes.run(
      SCRIPTS.indexFamily,
      [this.#subjectKey(kind, subject)],
      [familyId, listedUntil, this.#now()],
    );
  }

  /** The family's record and its retry record: one hash tag, so one cluster slot. */
  #familyKeys(familyId: string): [string, string] {
    const family = `${this.#prefix}{${familyId}}`;
    return [family, `${family}:r`];
  }

  #subjectKey(kind: AccountKind, subject: string): string {
    const account = createHash('sha256').update(`${kind}:${subject}`).digest('base64url').slice(0, 16);
    return `${this.#prefix}s:{${account}}`;
  }
}

/** Refresh tokens in Redis, by the rules of the OAuth domain. */
export class RedisRefreshTokenStore extends VersionedRefreshTokenStore {
  /**
   * `writes`: where every write that an answer depends on goes, acknowledged by replicas or
   * not; the caller's clock (`now`) decides expiry and retry windows, and Redis's own expiry
   * only frees the memory.
   */
  constructor(
    redis: RedisClient,
    options: { prefix?: string; now?: () => number; writes?: ScriptWrites } = {},
  ) {
    const now = options.now ?? Date.now;
    super(
      new RedisFamilyRecords(redis, options.writes ?? immediateWrites(redis), options.prefix ?? 'rt:', now),
      now,
    );
  }
}

/**
 * A version no write of the family had before, even one a failover lost: a random 48-bit
 * number (exact in Lua's doubles), so that a record read from a server that lost it cannot
 * pass for the one written since on another.
 */
function newVersion(): number {
  return randomInt(1, 2 ** 48);
}

/** A family as versions before the versioned records kept it: two hashes (see `read`). */
function decodeEarlierLayout(
  familyId: string,
  family: Record<string, string>,
  retry: Record<string, string>,
): VersionedFamilyRecord {
  const record: RefreshFamilyRecord = {
    family: {
      familyId,
      clientId: String(family.c),
      accountKind: family.k as AccountKind,
      subject: String(family.u),
      scope: String(family.sc),
      credentialStamp: String(family.st),
      expiresAt: Number(family.e),
    },
    current: { generation: Number(family.g), mac: String(family.m) },
    revoked: family.s === 'r',
  };
  if (retry.m !== undefined && retry.x !== undefined)
    record.retry = {
      replacedMac: retry.m,
      sealedSuccessor: retry.x,
      until: Number(retry.e),
      ...(retry.l !== undefined && { limit: Number(retry.l) }),
      ...(retry.p !== undefined && { pending: retry.p }),
    };
  return { record, version: 0 };
}

function decode(familyId: string, family: string, retry: string | null): VersionedFamilyRecord {
  const [
    version,
    generation,
    mac,
    revoked,
    expiresAt,
    clientId,
    accountKind,
    subject,
    scope,
    credentialStamp,
    listedUntil,
  ] = JSON.parse(family) as StoredFamily;
  const record: RefreshFamilyRecord = {
    family: { familyId, clientId, accountKind, subject, scope, credentialStamp, expiresAt },
    current: { generation, mac },
    revoked: revoked === 1,
  };
  if (retry) {
    const [replacedMac, sealedSuccessor, until, limit, pending] = JSON.parse(retry) as StoredRetry;
    record.retry = {
      replacedMac,
      sealedSuccessor,
      until,
      ...(limit > 0 && { limit }),
      ...(pending !== '' && { pending }),
    };
  }
  return { record, version, ...(listedUntil !== undefined && { listedUntil }) };
}
