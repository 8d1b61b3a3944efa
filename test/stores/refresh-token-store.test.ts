/**
 * The RefreshTokenStore contract, run against the memory store always and against Redis
 * when REDIS_URL is set.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { MemoryRefreshTokenStore } from '../../src/stores/memory/index.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import type { AccountKind, RefreshTokenGrant, RefreshTokenStore } from '../../src/stores/types.ts';
import { uniqueName } from '../support/backends.ts';

interface Harness {
  store: RefreshTokenStore;
  close(): Promise<void>;
}

/** Stands in for the HMAC of a token: the store only ever sees digests. */
function digest(): string {
  return createHash('sha256').update(randomUUID()).digest('hex');
}

function grant(overrides: Partial<RefreshTokenGrant> = {}): RefreshTokenGrant {
  return {
    familyId: randomUUID(),
    clientId: 'web',
    accountKind: 'user',
    subject: randomUUID(),
    scope: 'profile email',
    credentialStamp: 'stamp-of-the-password-hash',
    expiresAt: Date.now() + 60_000,
    ...overrides,
  };
}

/** Saves a new token and returns what a caller needs to consume it. */
async function issue(
  store: RefreshTokenStore,
  g: RefreshTokenGrant,
): Promise<{ familyId: string; digest: string }> {
  const d = digest();
  assert.equal(await store.save(d, g), true);
  return { familyId: g.familyId, digest: d };
}

/** Consumes a token that must be unused, returning the grant and the attempt that holds it. */
async function consumed(
  store: RefreshTokenStore,
  t: { familyId: string; digest: string },
): Promise<{ grant: RefreshTokenGrant; attempt: string }> {
  const result = await store.consume(t.familyId, t.digest);
  assert.equal(result.outcome, 'consumed');
  return result;
}

function refreshTokenContract(open: () => Promise<Harness>): void {
  let store: RefreshTokenStore;
  let h: Harness | undefined;
  before(async () => {
    h = await open();
    store = h.store;
  });
  after(async () => {
    await h?.close();
  });

  test('a saved token is consumed once; in flight until its successor is saved, reused after', async () => {
    const g = grant();
    const t = await issue(store, g);
    const consumed = await store.consume(t.familyId, t.digest);
    assert.equal(consumed.outcome, 'consumed');
    assert.deepEqual(consumed.grant, g);
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'in-flight' });
    const successor = digest();
    assert.equal(await store.save(successor, { ...g, expiresAt: Date.now() + 60_000 }, t.digest), true);
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'reused', grant: g });
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'reused', grant: g });
    assert.equal((await store.consume(t.familyId, successor)).outcome, 'consumed');
  });

  test('a successor marks only a token of its own family rotated', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.equal((await store.consume(t.familyId, t.digest)).outcome, 'consumed');
    await store.save(digest(), grant(), t.digest);
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'in-flight' });
  });

  test('of 20 concurrent consumes of one token exactly one wins; the others see it in flight', async () => {
    const g = grant();
    const t = await issue(store, g);
    const results = await Promise.all(Array.from({ length: 20 }, () => store.consume(t.familyId, t.digest)));
    assert.equal(results.filter((r) => r.outcome === 'consumed').length, 1);
    assert.equal(results.filter((r) => r.outcome === 'in-flight').length, 19);
  });

  test('a released token is unused again: the next consume wins, as a new attempt', async () => {
    const g = grant();
    const t = await issue(store, g);
    const first = await consumed(store, t);
    await store.release(t.familyId, t.digest, first.attempt);
    const second = await consumed(store, t);
    assert.deepEqual(second.grant, g);
    assert.notEqual(second.attempt, first.attempt);
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'in-flight' });
  });

  test('release undoes only the attempt that still holds the token', async () => {
    const t = await issue(store, grant());
    const first = await consumed(store, t);
    await store.release(t.familyId, t.digest, first.attempt);
    await consumed(store, t);
    // A late second release of the first attempt must not free the token a second refresh holds.
    await store.release(t.familyId, t.digest, first.attempt);
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'in-flight' });
    await store.release(t.familyId, t.digest, 'an attempt that never was');
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'in-flight' });
  });

  test('release never revives a rotated, revoked or unused token', async () => {
    const g = grant();
    const rotated = await issue(store, g);
    const attempt = (await consumed(store, rotated)).attempt;
    const successor = digest();
    assert.equal(await store.save(successor, g, rotated.digest), true);
    await store.release(rotated.familyId, rotated.digest, attempt);
    assert.deepEqual(await store.consume(rotated.familyId, rotated.digest), { outcome: 'reused', grant: g });

    const revoked = await issue(store, grant());
    const held = (await consumed(store, revoked)).attempt;
    await store.revokeFamily(revoked.familyId);
    await store.release(revoked.familyId, revoked.digest, held);
    assert.deepEqual(await store.consume(revoked.familyId, revoked.digest), { outcome: 'revoked' });

    const unused = await issue(store, grant());
    await store.release(unused.familyId, unused.digest, 'no attempt');
    await store.release(randomUUID(), digest(), 'no attempt');
    assert.equal((await store.consume(unused.familyId, unused.digest)).outcome, 'consumed');
  });

  test('an unknown digest, or a known one under another family, is unknown', async () => {
    const t = await issue(store, grant());
    assert.deepEqual(await store.consume(t.familyId, digest()), { outcome: 'unknown' });
    assert.deepEqual(await store.consume(randomUUID(), t.digest), { outcome: 'unknown' });
    // The mismatched attempt did not use the token up.
    assert.equal((await store.consume(t.familyId, t.digest)).outcome, 'consumed');
  });

  test('revokeFamily stops every token of the family, used or not', async () => {
    const family = randomUUID();
    const used = await issue(store, grant({ familyId: family }));
    const unused = await issue(store, grant({ familyId: family, expiresAt: Date.now() + 120_000 }));
    const bystander = await issue(store, grant());
    assert.equal((await store.consume(used.familyId, used.digest)).outcome, 'consumed');
    await store.revokeFamily(family);
    assert.deepEqual(await store.consume(used.familyId, used.digest), { outcome: 'revoked' });
    assert.deepEqual(await store.consume(unused.familyId, unused.digest), { outcome: 'revoked' });
    assert.equal((await store.consume(bystander.familyId, bystander.digest)).outcome, 'consumed');
  });

  test('no token is saved into a revoked family, not even after its first tokens expire', async () => {
    const family = randomUUID();
    const first = await issue(store, grant({ familyId: family, expiresAt: Date.now() + 300 }));
    await store.revokeFamily(family);
    // A refresh that consumed its token just before the revocation now saves its successor.
    const late = digest();
    assert.equal(await store.save(late, grant({ familyId: family, expiresAt: Date.now() + 60_000 })), false);
    await sleep(450);
    assert.deepEqual(await store.consume(family, late), { outcome: 'unknown' });
    assert.notEqual((await store.consume(family, first.digest)).outcome, 'consumed');
  });

  test('revokeFamily of an unknown family is harmless', async () => {
    await store.revokeFamily(randomUUID());
  });

  test('revokeSubject revokes every family of that account and no other', async () => {
    const subject = randomUUID();
    const first = await issue(store, grant({ subject }));
    const second = await issue(store, grant({ subject, clientId: 'cli' }));
    const sameIdOtherKind = await issue(store, grant({ subject, accountKind: 'admin' }));
    const otherSubject = await issue(store, grant());
    assert.equal((await store.consume(first.familyId, first.digest)).outcome, 'consumed');

    await store.revokeSubject('user', subject);
    assert.deepEqual(await store.consume(first.familyId, first.digest), { outcome: 'revoked' });
    assert.deepEqual(await store.consume(second.familyId, second.digest), { outcome: 'revoked' });
    assert.equal((await store.consume(sameIdOtherKind.familyId, sameIdOtherKind.digest)).outcome, 'consumed');
    assert.equal((await store.consume(otherSubject.familyId, otherSubject.digest)).outcome, 'consumed');

    // A login after the revocation starts a family that works.
    const fresh = await issue(store, grant({ subject }));
    assert.equal((await store.consume(fresh.familyId, fresh.digest)).outcome, 'consumed');
    await store.revokeSubject('admin' satisfies AccountKind, randomUUID());
  });

  test('a token whose grant already expired is unknown', async () => {
    const t = await issue(store, grant({ expiresAt: Date.now() - 1000 }));
    assert.deepEqual(await store.consume(t.familyId, t.digest), { outcome: 'unknown' });
  });

  test('a token is unknown once its grant expires', async () => {
    const short = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    const used = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    assert.equal((await store.consume(used.familyId, used.digest)).outcome, 'consumed');
    await sleep(450);
    assert.deepEqual(await store.consume(short.familyId, short.digest), { outcome: 'unknown' });
    assert.deepEqual(await store.consume(used.familyId, used.digest), { outcome: 'unknown' });
  });

  test('a revoked family stays revoked while its longest-lived token lives', async () => {
    const family = randomUUID();
    const short = await issue(store, grant({ familyId: family, expiresAt: Date.now() + 300 }));
    const long = await issue(store, grant({ familyId: family, expiresAt: Date.now() + 60_000 }));
    await store.revokeFamily(family);
    await sleep(450);
    assert.deepEqual(await store.consume(short.familyId, short.digest), { outcome: 'unknown' });
    assert.deepEqual(await store.consume(long.familyId, long.digest), { outcome: 'revoked' });
  });
}

describe('RefreshTokenStore: memory', () => {
  refreshTokenContract(async () => ({ store: new MemoryRefreshTokenStore(), close: async () => {} }));
});

const redisUrl = process.env.REDIS_URL;

describe('RefreshTokenStore: Redis', {
  skip: redisUrl ? false : 'REDIS_URL not set: real Redis contract not run',
}, () => {
  // A key prefix of its own per run, so concurrent runs never see each other's keys.
  const prefix = `${uniqueName('rt_test')}:`;
  let redis: Redis;

  refreshTokenContract(async () => {
    redis = new Redis(redisUrl ?? '');
    return {
      store: new RedisRefreshTokenStore(redis, { prefix }),
      async close() {
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length > 0) await redis.del(...keys);
        await redis.quit();
      },
    };
  });

  test('every key is under the prefix, hash-tagged per family, and expires', async () => {
    const store = new RedisRefreshTokenStore(redis, { prefix });
    const g = grant({ accountKind: 'admin' });
    const d = digest();
    await store.save(d, g);
    await store.consume(g.familyId, d);
    await store.revokeFamily(g.familyId);
    const keys = (await redis.keys(`${prefix}*${g.familyId}*`)).sort();
    assert.deepEqual(keys, [
      `${prefix}{${g.familyId}}:exp`,
      `${prefix}{${g.familyId}}:revoked`,
      `${prefix}{${g.familyId}}:t:${d}`,
    ]);
    const subjectKey = `${prefix}s:{admin:${g.subject}}`;
    assert.deepEqual(await redis.smembers(subjectKey), [g.familyId]);
    for (const key of [...keys, subjectKey]) {
      const ttl = await redis.pttl(key);
      assert.ok(ttl > 0 && ttl <= 60_000, `${key} expires (pttl ${ttl})`);
    }
  });
});

describe('RefreshTokenStore: memory, over a long run', () => {
  const MINUTE = 60_000;
  /** Enough saves for the store to sweep out what has expired. */
  const SWEEP_EVERY = 1024;

  test('expired tokens, families, revocations and per-account indexes are forgotten', async () => {
    let now = Date.UTC(2030, 0, 1);
    const store = new MemoryRefreshTokenStore(() => now);
    for (let i = 0; i < SWEEP_EVERY; i++) {
      const g = grant({ subject: randomUUID(), expiresAt: now + MINUTE });
      await store.save(digest(), g);
      if (i % 8 === 0) await store.revokeFamily(g.familyId);
    }
    assert.deepEqual(store.footprint(), {
      tokens: SWEEP_EVERY,
      families: SWEEP_EVERY,
      revokedFamilies: SWEEP_EVERY / 8,
      accountIndex: SWEEP_EVERY,
    });

    now += 2 * MINUTE;
    const fresh = await issue(store, grant({ expiresAt: now + MINUTE }));
    assert.deepEqual(store.footprint(), { tokens: 1, families: 1, revokedFamilies: 0, accountIndex: 1 });
    assert.equal((await store.consume(fresh.familyId, fresh.digest)).outcome, 'consumed');
  });

  test('the sweep keeps the live families of an account, so revokeSubject still reaches them', async () => {
    let now = Date.UTC(2030, 0, 1);
    const store = new MemoryRefreshTokenStore(() => now);
    const subject = randomUUID();
    const live = await issue(store, grant({ subject, expiresAt: now + 10 * MINUTE }));
    await issue(store, grant({ subject, expiresAt: now + MINUTE }));
    for (let i = 2; i < SWEEP_EVERY; i++) await store.save(digest(), grant({ expiresAt: now + MINUTE }));

    now += 2 * MINUTE;
    await issue(store, grant({ expiresAt: now + MINUTE }));
    assert.deepEqual(store.footprint(), { tokens: 2, families: 2, revokedFamilies: 0, accountIndex: 2 });
    await store.revokeSubject('user', subject);
    assert.deepEqual(await store.consume(live.familyId, live.digest), { outcome: 'revoked' });
  });
});
