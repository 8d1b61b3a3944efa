/**
 * The RefreshTokenStore contract, run against the memory store always and against Redis
 * when REDIS_URL is set.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MemoryRefreshTokenStore } from '../../src/stores/memory/index.ts';
import type { RedisClient } from '../../src/stores/redis/connect.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import type {
  AccountKind,
  RefreshTokenGeneration,
  RefreshTokenGrant,
  RefreshTokenStore,
} from '../../src/stores/types.ts';
import { uniqueName } from '../support/backends.ts';
import { connectTestRedis, deleteKeys, keysOf, redisTargets } from '../support/redis.ts';

interface Harness {
  store: RefreshTokenStore;
  close(): Promise<void>;
}

/** Stands in for the MAC a token carries: the store only ever sees MACs. */
function mac(): string {
  return randomBytes(16).toString('base64url');
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

/** A token as the store sees it: its family, generation and MAC. */
interface Token extends RefreshTokenGeneration {
  familyId: string;
}

/** Starts a family and returns its first token. */
async function issue(store: RefreshTokenStore, g: RefreshTokenGrant): Promise<Token> {
  const first = { generation: 0, mac: mac() };
  assert.equal(await store.create(g, first), true);
  return { familyId: g.familyId, ...first };
}

function present(store: RefreshTokenStore, t: Token, attempt = randomUUID(), leaseMs = 5000) {
  return store.consume(t.familyId, t, { attempt, leaseUntil: Date.now() + leaseMs });
}

/** Consumes a token that must be unused; returns its grant and the attempt that holds it. */
async function consumed(
  store: RefreshTokenStore,
  t: Token,
  leaseMs = 5000,
): Promise<{ grant: RefreshTokenGrant; attempt: string }> {
  const attempt = randomUUID();
  const result = await present(store, t, attempt, leaseMs);
  assert.equal(result.outcome, 'consumed');
  return { grant: result.grant, attempt };
}

/** Rotates a consumed token: its successor, one generation on, lives until `expiresAt`. */
async function rotated(
  store: RefreshTokenStore,
  t: Token,
  held: { grant: RefreshTokenGrant; attempt: string },
  expiresAt = Date.now() + 90_000,
): Promise<Token> {
  const successor = { generation: t.generation + 1, mac: mac() };
  const renewed = { ...held.grant, expiresAt };
  assert.equal(await store.rotate(renewed, held.attempt, successor), true);
  return { familyId: t.familyId, ...successor };
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

  test('a token is consumed once, in flight until rotated; the successor is the one that works', async () => {
    const g = grant();
    const t = await issue(store, g);
    const held = await consumed(store, t);
    assert.deepEqual(held.grant, g);
    assert.deepEqual(await present(store, t), { outcome: 'in-flight' });
    const next = await rotated(store, t, held);
    const again = await consumed(store, next);
    assert.equal(again.grant.scope, g.scope);
    assert.ok(again.grant.expiresAt > g.expiresAt, 'a rotation starts a new lifetime');
  });

  test('an older generation presented again is reused, and the whole family is revoked with that verdict', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, t, await consumed(store, t));
    const replay = await present(store, t);
    assert.equal(replay.outcome, 'reused');
    assert.equal(replay.outcome === 'reused' && replay.grant.subject, g.subject);
    assert.deepEqual(await present(store, next), { outcome: 'revoked' });
    assert.deepEqual(await present(store, t), { outcome: 'revoked' });
  });

  test('of 50 concurrent consumes of one token exactly one wins; the others see it in flight', async () => {
    const t = await issue(store, grant());
    const results = await Promise.all(Array.from({ length: 50 }, () => present(store, t)));
    assert.equal(results.filter((r) => r.outcome === 'consumed').length, 1);
    assert.equal(results.filter((r) => r.outcome === 'in-flight').length, 49);
  });

  test('inspect reads what a token is now and changes nothing, a reused one included', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.deepEqual(await store.inspect(t.familyId, t), { state: 'current', grant: g });
    assert.deepEqual(await store.inspect(t.familyId, t), { state: 'current', grant: g });
    const held = await consumed(store, t);
    assert.deepEqual(await store.inspect(t.familyId, t), { state: 'in-flight' });
    const next = await rotated(store, t, held);
    const older = await store.inspect(t.familyId, t);
    assert.equal(older.state, 'reused');
    // Seen, not acted on: the family is not revoked, its current token still works.
    assert.equal((await store.inspect(next.familyId, next)).state, 'current');
    assert.equal((await present(store, next)).outcome, 'consumed');
    assert.deepEqual(await store.inspect(t.familyId, { ...t, generation: 5 }), { state: 'unknown' });
    assert.deepEqual(await store.inspect(randomUUID(), t), { state: 'unknown' });
    await store.revokeFamily(t.familyId);
    assert.deepEqual(await store.inspect(next.familyId, next), { state: 'revoked' });
  });

  test('only the attempt holding the token rotates it', async () => {
    const t = await issue(store, grant());
    const held = await consumed(store, t);
    const successor = { generation: 1, mac: mac() };
    assert.equal(await store.rotate(held.grant, 'another attempt', successor), false);
    assert.equal(await store.rotate(held.grant, held.attempt, successor), true);
    assert.equal(await store.rotate(held.grant, held.attempt, { generation: 2, mac: mac() }), false);
  });

  test('a released token is unused again: the next consume wins, and the released attempt cannot rotate', async () => {
    const t = await issue(store, grant());
    const first = await consumed(store, t);
    await store.release(t.familyId, first.attempt);
    const second = await consumed(store, t);
    assert.deepEqual(await present(store, t), { outcome: 'in-flight' });
    assert.equal(await store.rotate(first.grant, first.attempt, { generation: 1, mac: mac() }), false);
    await rotated(store, t, second);
  });

  test('release undoes only the attempt that still holds the token', async () => {
    const t = await issue(store, grant());
    const first = await consumed(store, t);
    await store.release(t.familyId, first.attempt);
    await consumed(store, t);
    // A late second release of the first attempt must not free the token a second refresh holds.
    await store.release(t.familyId, first.attempt);
    assert.deepEqual(await present(store, t), { outcome: 'in-flight' });
    await store.release(t.familyId, 'an attempt that never was');
    assert.deepEqual(await present(store, t), { outcome: 'in-flight' });
  });

  test('a release naming another successor rolls nothing back', async () => {
    const t = await issue(store, grant());
    const held = await consumed(store, t);
    const next = await rotated(store, t, held);
    await store.release(t.familyId, held.attempt, { successorMac: mac(), previousMac: t.mac });
    assert.equal((await present(store, next)).outcome, 'consumed');
  });

  test('a rotation whose reply was lost is rolled back by its release while its successor is unused', async () => {
    const t = await issue(store, grant());
    const held = await consumed(store, t);
    const lost = await rotated(store, t, held);
    await store.release(t.familyId, held.attempt, { successorMac: lost.mac, previousMac: t.mac });
    // The client still holds the token it presented: its retry works, and nothing is revoked.
    assert.deepEqual(await present(store, lost), { outcome: 'unknown' });
    const retry = await consumed(store, t);
    const next = await rotated(store, t, retry);
    assert.equal(next.generation, lost.generation);
    assert.equal((await present(store, next)).outcome, 'consumed');
  });

  test('once its successor is used, a rotation is never rolled back', async () => {
    const t = await issue(store, grant());
    const held = await consumed(store, t);
    const next = await rotated(store, t, held);
    await consumed(store, next);
    await store.release(t.familyId, held.attempt, { successorMac: next.mac, previousMac: t.mac });
    assert.deepEqual(await present(store, next), { outcome: 'in-flight' });
    assert.equal((await present(store, t)).outcome, 'reused');
  });

  test('a refresh that never completes holds the token only for its lease', async () => {
    const t = await issue(store, grant());
    const stalled = await consumed(store, t, 200);
    assert.deepEqual(await present(store, t), { outcome: 'in-flight' });
    await sleep(300);
    const retry = await consumed(store, t);
    // The stalled refresh, should it wake up, has lost the token: exactly one rotation lands.
    assert.equal(await store.rotate(stalled.grant, stalled.attempt, { generation: 1, mac: mac() }), false);
    await rotated(store, t, retry);
  });

  test('release never revives a revoked or unused token', async () => {
    const revoked = await issue(store, grant());
    const held = (await consumed(store, revoked)).attempt;
    await store.revokeFamily(revoked.familyId);
    await store.release(revoked.familyId, held);
    assert.deepEqual(await present(store, revoked), { outcome: 'revoked' });

    const unused = await issue(store, grant());
    await store.release(unused.familyId, 'no attempt');
    await store.release(randomUUID(), 'no attempt');
    assert.equal((await present(store, unused)).outcome, 'consumed');
  });

  test('a MAC not current, a generation not yet issued, or an unknown family is unknown, and harms nothing', async () => {
    const t = await issue(store, grant());
    assert.deepEqual(await present(store, { ...t, mac: mac() }), { outcome: 'unknown' });
    assert.deepEqual(await present(store, { ...t, generation: 1 }), { outcome: 'unknown' });
    assert.deepEqual(await present(store, { ...t, familyId: randomUUID() }), { outcome: 'unknown' });
    assert.equal((await present(store, t)).outcome, 'consumed');
  });

  test('revokeFamily stops the family, used or not, and no other', async () => {
    const used = await issue(store, grant());
    const unused = await issue(store, grant());
    const bystander = await issue(store, grant());
    const held = await consumed(store, used);
    await store.revokeFamily(used.familyId);
    await store.revokeFamily(unused.familyId);
    assert.deepEqual(await present(store, used), { outcome: 'revoked' });
    assert.deepEqual(await present(store, unused), { outcome: 'revoked' });
    // A refresh that consumed its token just before the revocation cannot plant a successor.
    assert.equal(await store.rotate(held.grant, held.attempt, { generation: 1, mac: mac() }), false);
    assert.equal((await present(store, bystander)).outcome, 'consumed');
  });

  test('a family is created once: never again, revoked or not', async () => {
    const g = grant();
    await issue(store, g);
    assert.equal(await store.create(g, { generation: 0, mac: mac() }), false);
    await store.revokeFamily(g.familyId);
    assert.equal(await store.create(g, { generation: 0, mac: mac() }), false);
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
    const rotatedFirst = await rotated(store, first, await consumed(store, first));

    await store.revokeSubject('user', subject);
    assert.deepEqual(await present(store, rotatedFirst), { outcome: 'revoked' });
    assert.deepEqual(await present(store, second), { outcome: 'revoked' });
    assert.equal((await present(store, sameIdOtherKind)).outcome, 'consumed');
    assert.equal((await present(store, otherSubject)).outcome, 'consumed');

    // A login after the revocation starts a family that works.
    const fresh = await issue(store, grant({ subject }));
    assert.equal((await present(store, fresh)).outcome, 'consumed');
    await store.revokeSubject('admin' satisfies AccountKind, randomUUID());
  });

  test('a token whose grant already expired is unknown', async () => {
    const t = await issue(store, grant({ expiresAt: Date.now() - 1000 }));
    assert.deepEqual(await present(store, t), { outcome: 'unknown' });
  });

  test('a family is unknown once it expires, used or not, revoked or not', async () => {
    const short = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    const used = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    const revoked = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    await consumed(store, used);
    await store.revokeFamily(revoked.familyId);
    await sleep(450);
    assert.deepEqual(await present(store, short), { outcome: 'unknown' });
    assert.deepEqual(await present(store, used), { outcome: 'unknown' });
    assert.deepEqual(await present(store, revoked), { outcome: 'unknown' });
  });

  test('a rotation extends the family past its first expiry', async () => {
    const t = await issue(store, grant({ expiresAt: Date.now() + 300 }));
    const next = await rotated(store, t, await consumed(store, t));
    await sleep(450);
    assert.equal((await present(store, next)).outcome, 'consumed');
  });
}

describe('RefreshTokenStore: memory', () => {
  refreshTokenContract(async () => ({ store: new MemoryRefreshTokenStore(), close: async () => {} }));
});

for (const { label, url: redisUrl } of redisTargets())
  describe(`RefreshTokenStore: Redis, ${label}`, {
    skip: redisUrl ? false : `no URL for Redis (${label}): real Redis contract not run`,
  }, () => {
    // A key prefix of its own per run, so concurrent runs never see each other's keys.
    const prefix = `${uniqueName('rt_test')}:`;
    let redis: RedisClient;

    refreshTokenContract(async () => {
      redis = await connectTestRedis(redisUrl ?? '');
      return {
        store: new RedisRefreshTokenStore(redis, { prefix }),
        async close() {
          await deleteKeys(redis, `${prefix}*`);
          await redis.quit();
        },
      };
    });

    test('a family is one key however often it rotates; the account index drops expired and revoked families', async () => {
      const store = new RedisRefreshTokenStore(redis, { prefix });
      const subject = randomUUID();
      const g = grant({ accountKind: 'admin', subject });
      let t = await issue(store, g);
      for (let i = 0; i < 20; i++) t = await rotated(store, t, await consumed(store, t));
      assert.deepEqual(await keysOf(redis, `${prefix}*${g.familyId}*`), [`${prefix}{${g.familyId}}`]);
      const subjectKeys = await keysOf(redis, `${prefix}s:*`);
      const subjectKey = (
        await Promise.all(subjectKeys.map(async (key) => ((await redis.zscore(key, g.familyId)) ? key : '')))
      ).find(Boolean);
      assert.ok(subjectKey, 'the family is listed under its account');
      assert.deepEqual(await redis.zrange(subjectKey, '0', '-1'), [g.familyId]);
      for (const key of [`${prefix}{${g.familyId}}`, subjectKey]) {
        const ttl = await redis.pttl(key);
        assert.ok(ttl > 0 && ttl <= 90_000, `${key} expires (pttl ${ttl})`);
      }

      const revoked = await issue(store, grant({ accountKind: 'admin', subject }));
      await issue(store, grant({ accountKind: 'admin', subject, expiresAt: Date.now() + 200 }));
      assert.equal((await present(store, revoked)).outcome, 'consumed');
      await store.revokeFamily(revoked.familyId);
      await sleep(300);
      // The next write to the account prunes the family that expired meanwhile.
      const fresh = await issue(store, grant({ accountKind: 'admin', subject }));
      assert.deepEqual(
        (await redis.zrange(subjectKey, '0', '-1')).sort(),
        [g.familyId, fresh.familyId].sort(),
      );
    });
  });

describe('RefreshTokenStore: memory, over a long run', () => {
  const MINUTE = 60_000;
  /** Enough writes for the store to sweep out what has expired. */
  const SWEEP_EVERY = 1024;

  test('a family is one entry however often it rotates, and expired families are forgotten', async () => {
    let now = Date.UTC(2030, 0, 1);
    const store = new MemoryRefreshTokenStore(() => now);
    const g = grant({ expiresAt: now + MINUTE });
    let t = await issue(store, g);
    for (let i = 0; i < 20; i++) t = await rotated(store, t, await consumed(store, t), now + MINUTE);
    assert.deepEqual(store.footprint(), { families: 1, accountIndex: 1 });

    for (let i = 1; i < SWEEP_EVERY; i++)
      await store.create(grant({ expiresAt: now + MINUTE }), { generation: 0, mac: mac() });
    assert.deepEqual(store.footprint(), { families: SWEEP_EVERY, accountIndex: SWEEP_EVERY });
    now += 2 * MINUTE;
    const fresh = await issue(store, grant({ expiresAt: now + MINUTE }));
    for (let i = 0; i < 20; i++)
      await store.create(grant({ expiresAt: now + MINUTE }), { generation: 0, mac: mac() });
    assert.deepEqual(store.footprint(), { families: 21, accountIndex: 21 });
    assert.equal((await present(store, fresh)).outcome, 'consumed');
  });

  test('the sweep keeps the live families of an account, so revokeSubject still reaches them', async () => {
    let now = Date.UTC(2030, 0, 1);
    const store = new MemoryRefreshTokenStore(() => now);
    const subject = randomUUID();
    const live = await issue(store, grant({ subject, expiresAt: now + 10 * MINUTE }));
    await issue(store, grant({ subject, expiresAt: now + MINUTE }));
    for (let i = 2; i < SWEEP_EVERY; i++)
      await store.create(grant({ expiresAt: now + MINUTE }), { generation: 0, mac: mac() });

    now += 2 * MINUTE;
    await issue(store, grant({ expiresAt: now + MINUTE }));
    assert.deepEqual(store.footprint(), { families: 2, accountIndex: 2 });
    await store.revokeSubject('user', subject);
    assert.deepEqual(await present(store, live), { outcome: 'revoked' });
  });
});
