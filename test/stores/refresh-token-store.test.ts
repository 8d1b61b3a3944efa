/**
 * The RefreshTokenStore contract, run against the memory store always and against Redis
 * when REDIS_URL is set.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AccountKind } from '../../src/accounts/model.ts';
import { NotReplicated } from '../../src/errors.ts';
import {
  MAX_REFRESH_TOKEN_RETRY_SECONDS,
  type RefreshTokenFamily,
  type RefreshTokenGeneration,
  type RefreshTokenRetry,
  type RefreshTokenStore,
} from '../../src/oauth/model.ts';
import { MemoryRefreshTokenStore } from '../../src/stores/memory/index.ts';
import type { RedisClient } from '../../src/stores/redis/connect.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import { runScript } from '../../src/stores/redis/scripts.ts';
import { acknowledgedWrites, type ScriptWrites } from '../../src/stores/redis/writes.ts';
import { uniqueName } from '../support/backends.ts';
import { connectTestRedis, deleteKeys, keysOf, redisTargets } from '../support/redis.ts';

interface Harness {
  store: RefreshTokenStore;
  close(): Promise<void>;
}

/**
 * The contract stores' clock (epoch ms): set to the real time before each test, moved on by
 * the tests instead of sleeping. Never behind the real time, so Redis frees a key no earlier
 * than the store's clock says it may.
 */
let clock = Date.now();
const now = () => clock;
const SECOND = 1000;

/** Stands in for the MAC a token carries: the store only ever sees MACs. */
function mac(): string {
  return randomBytes(16).toString('base64url');
}

function grant(overrides: Partial<RefreshTokenFamily> = {}): RefreshTokenFamily {
  return {
    familyId: randomUUID(),
    clientId: 'web',
    accountKind: 'user',
    subject: randomUUID(),
    scope: 'profile email',
    credentialStamp: 'stamp-of-the-password-hash',
    expiresAt: clock + 60_000,
    ...overrides,
  };
}

/** A token as the store sees it: its family, generation and MAC. */
interface Token extends RefreshTokenGeneration {
  familyId: string;
}

/** Starts a family and returns its first token. */
async function issue(store: RefreshTokenStore, g: RefreshTokenFamily): Promise<Token> {
  const first = { generation: 0, mac: mac() };
  assert.equal(await store.create(g, first), true);
  return { familyId: g.familyId, ...first };
}

/** What the store says the token is now. */
function inspect(store: RefreshTokenStore, t: Token) {
  return store.inspect(t.familyId, t);
}

/**
 * The retry record a rotation keeps: a stand-in for the sealed successor, for `ms` from now,
 * and the hard maximum from now, as the refresh-token service asks for them.
 */
function retryFor(ms = 5000): RefreshTokenRetry {
  return {
    sealedSuccessor: `sealed-${randomUUID()}`,
    until: clock + ms,
    limit: clock + MAX_REFRESH_TOKEN_RETRY_SECONDS * SECOND,
  };
}

/** Rotates the token, which must be current; its successor, one generation on, lives until `expiresAt`. */
async function rotated(
  store: RefreshTokenStore,
  g: RefreshTokenFamily,
  t: Token,
  options: { retry?: RefreshTokenRetry; expiresAt?: number } = {},
): Promise<Token> {
  const successor = { generation: t.generation + 1, mac: mac() };
  const renewed = { ...g, expiresAt: options.expiresAt ?? clock + 90_000 };
  assert.deepEqual(await store.rotate(renewed, t, successor, options.retry), { state: 'rotated' });
  return { familyId: t.familyId, ...successor };
}

/** Presents the token to `rotate` as a refresh would: what it did, or what it found. */
function rotateAgain(store: RefreshTokenStore, g: RefreshTokenFamily, t: Token, retry?: RefreshTokenRetry) {
  return store.rotate(g, t, { generation: t.generation + 1, mac: mac() }, retry);
}

/** Runs the contract on the stores `open` makes, which read the time from `now`. */
function refreshTokenContract(open: (now: () => number) => Promise<Harness>): void {
  let store: RefreshTokenStore;
  let h: Harness | undefined;
  before(async () => {
    h = await open(now);
    store = h.store;
  });
  beforeEach(() => {
    clock = Date.now();
  });
  after(async () => {
    await h?.close();
  });

  test('a current token rotates once; its successor is current, with a new lifetime', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.deepEqual(await inspect(store, t), { state: 'current', family: g });
    const next = await rotated(store, g, t);
    const found = await inspect(store, next);
    assert.equal(found.state, 'current');
    assert.ok(
      found.state === 'current' && found.family.expiresAt > g.expiresAt,
      'a rotation starts a new lifetime',
    );
    await rotated(store, g, next);
  });

  test('inspect reads what a token is now and changes nothing, a reused one included', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.deepEqual(await inspect(store, t), { state: 'current', family: g });
    assert.deepEqual(await inspect(store, t), { state: 'current', family: g });
    const next = await rotated(store, g, t);
    assert.equal((await inspect(store, t)).state, 'reused');
    // Seen, not acted on: the family is not revoked, its current token still rotates.
    assert.equal((await inspect(store, next)).state, 'current');
    await rotated(store, g, next);
    assert.deepEqual(await inspect(store, { ...t, generation: 5 }), { state: 'unknown' });
    assert.deepEqual(await inspect(store, { ...t, familyId: randomUUID() }), { state: 'unknown' });
    await store.revokeFamily(t.familyId);
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
  });

  test('the token a rotation replaced, within its window and its successor unused, finds the sealed successor, as often as it comes', async () => {
    const g = grant();
    const t = await issue(store, g);
    const retry = retryFor();
    const next = await rotated(store, g, t, { retry });
    const expected = { state: 'retry', family: { ...g, expiresAt: (await expiryOf(store, next)) ?? 0 } };
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await inspect(store, t), { ...expected, sealedSuccessor: retry.sealedSuccessor });
      assert.deepEqual(await rotateAgain(store, g, t, retryFor()), {
        ...expected,
        sealedSuccessor: retry.sealedSuccessor,
      });
    }
    // Nothing new was made: the successor is still the family's one current token.
    await rotated(store, g, next);
  });

  test('of 50 concurrent rotations of one token exactly one rotates; the others find its sealed successor', async () => {
    const g = grant();
    const t = await issue(store, g);
    const retries = Array.from({ length: 50 }, () => retryFor());
    const results = await Promise.all(retries.map((retry) => rotateAgain(store, g, t, retry)));
    const winner = results.findIndex((r) => r.state === 'rotated');
    assert.ok(winner >= 0, 'one rotated');
    const others = results.filter((_, i) => i !== winner);
    assert.deepEqual(
      others.map((r) => (r.state === 'retry' ? r.sealedSuccessor : r.state)),
      others.map(() => retries[winner]?.sealedSuccessor),
    );
  });

  test('concurrent retries that each ask a later end of the window all find the successor, in a few writes', async () => {
    const g = grant();
    const t = await issue(store, g);
    const retries = Array.from({ length: 30 }, (_, i) => retryFor(5000 + i));
    const results = await Promise.all(retries.map((retry) => rotateAgain(store, g, t, retry)));
    const winner = results.findIndex((r) => r.state === 'rotated');
    assert.ok(winner >= 0, 'one rotated');
    const sealed = results
      .filter((_, i) => i !== winner)
      .map((r) => (r.state === 'retry' ? r.sealedSuccessor : r.state));
    assert.deepEqual(
      sealed,
      sealed.map(() => retries[winner]?.sealedSuccessor),
    );
  });

  test('a rotation that starts from an inspection another rotation overtook finds that rotation', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.equal((await inspect(store, t)).state, 'current');
    // Another request with the same token, rotated first.
    const retry = retryFor();
    const next = await rotated(store, g, { ...t }, { retry });
    const found = await rotateAgain(store, g, t, retryFor());
    assert.deepEqual(found, {
      state: 'retry',
      family: { ...g, expiresAt: (await expiryOf(store, next)) ?? 0 },
      sealedSuccessor: retry.sealedSuccessor,
    });
  });

  test('without a retry record, a rotated token that comes back is reused, and concurrent ones too', async () => {
    const g = grant();
    const t = await issue(store, g);
    const results = await Promise.all(Array.from({ length: 10 }, () => rotateAgain(store, g, t)));
    const states = results.map((r) => r.state);
    assert.equal(states.filter((state) => state === 'rotated').length, 1);
    // The first to come back revokes the family; the ones after it find it revoked.
    assert.ok(states.includes('reused'), states.join());
    assert.deepEqual(
      states.filter((state) => state !== 'reused' && state !== 'rotated'),
      states.filter((state) => state === 'revoked'),
    );
  });

  test('an older generation presented to rotate is reused, and the whole family is revoked with that verdict', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { retry: retryFor() });
    const last = await rotated(store, g, next, { retry: retryFor() });
    // Two generations back: reuse, whatever the window.
    const replay = await rotateAgain(store, g, t, retryFor());
    assert.equal(replay.state, 'reused');
    assert.equal(replay.state === 'reused' && replay.family.subject, g.subject);
    assert.deepEqual(await inspect(store, last), { state: 'revoked' });
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
    assert.deepEqual(await rotateAgain(store, g, last), { state: 'revoked' });
  });

  test('once its successor is rotated, the token it replaced is reused', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { retry: retryFor() });
    await rotated(store, g, next, { retry: retryFor() });
    assert.equal((await rotateAgain(store, g, t)).state, 'reused');
  });

  test('after its window, the token a rotation replaced is reused', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { retry: retryFor(60 * SECOND) });
    clock += 59 * SECOND;
    assert.equal((await inspect(store, t)).state, 'retry');
    clock += 2 * SECOND;
    assert.equal((await inspect(store, t)).state, 'reused');
    assert.equal((await rotateAgain(store, g, t)).state, 'reused');
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
  });

  test('a retry starts the window again: it runs from the last answer that handed the successor out', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, {
      retry: retryFor(60 * SECOND),
      expiresAt: clock + 3600 * SECOND,
    });
    clock += 40 * SECOND;
    assert.equal((await rotateAgain(store, g, t, retryFor(60 * SECOND))).state, 'retry');
    clock += 40 * SECOND;
    // Past the rotation's window, within the retry's.
    assert.equal((await inspect(store, t)).state, 'retry');
    clock += 40 * SECOND;
    assert.equal((await rotateAgain(store, g, t, retryFor(60 * SECOND))).state, 'reused');
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
  });

  test("retries start the window again, but never past the hard maximum after the rotation's answer", async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, {
      retry: retryFor(60 * SECOND),
      expiresAt: clock + 3600 * SECOND,
    });
    const limit = clock + MAX_REFRESH_TOKEN_RETRY_SECONDS * SECOND;
    // A replay every 50 s, each asking for 60 s more (and a limit of its own, later each time).
    while (clock + 50 * SECOND < limit) {
      clock += 50 * SECOND;
      assert.equal((await rotateAgain(store, g, t, retryFor(60 * SECOND))).state, 'retry');
    }
    clock = limit - SECOND;
    assert.equal((await inspect(store, t)).state, 'retry');
    clock = limit + SECOND;
    assert.equal((await inspect(store, t)).state, 'reused');
    assert.equal((await rotateAgain(store, g, t, retryFor(60 * SECOND))).state, 'reused');
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
  });

  test("the hard maximum is the rotation's, not its predecessor's", async () => {
    const g = grant({ expiresAt: clock + 3600 * SECOND });
    const t = await issue(store, g);
    const expiresAt = clock + 3600 * SECOND;
    const next = await rotated(store, g, t, { retry: retryFor(60 * SECOND), expiresAt });
    clock += 200 * SECOND;
    const last = await rotated(store, g, next, { retry: retryFor(60 * SECOND), expiresAt });
    // 250 s after the first rotation, 50 s after this one: within this one's limit.
    for (let i = 0; i < 3; i++) {
      clock += 50 * SECOND;
      assert.equal((await rotateAgain(store, g, next, retryFor(60 * SECOND))).state, 'retry');
    }
    assert.equal((await inspect(store, last)).state, 'current');
  });

  test("the replaced generation with another MAC is not its retry: reused (only the key's holder can make one)", async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { retry: retryFor() });
    assert.equal((await rotateAgain(store, g, { ...t, mac: mac() })).state, 'reused');
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
  });

  test('a MAC not current, a generation not yet issued, or an unknown family is unknown, and harms nothing', async () => {
    const g = grant();
    const t = await issue(store, g);
    assert.deepEqual(await rotateAgain(store, g, { ...t, mac: mac() }), { state: 'unknown' });
    assert.deepEqual(await rotateAgain(store, g, { ...t, generation: 1 }), { state: 'unknown' });
    assert.deepEqual(
      await rotateAgain(store, { ...g, familyId: randomUUID() }, { ...t, familyId: randomUUID() }),
      {
        state: 'unknown',
      },
    );
    await rotated(store, g, t);
  });

  test('revokeFamily stops the family, its retry included, and no other', async () => {
    const g = grant();
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { retry: retryFor() });
    const unused = grant();
    const unusedToken = await issue(store, unused);
    const bystander = grant();
    const bystanderToken = await issue(store, bystander);
    await store.revokeFamily(t.familyId);
    await store.revokeFamily(unused.familyId);
    assert.deepEqual(await inspect(store, next), { state: 'revoked' });
    assert.deepEqual(await rotateAgain(store, g, t, retryFor()), { state: 'revoked' });
    assert.deepEqual(await rotateAgain(store, unused, unusedToken), { state: 'revoked' });
    await rotated(store, bystander, bystanderToken);
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
    const first = grant({ subject });
    const firstToken = await issue(store, first);
    const second = await issue(store, grant({ subject, clientId: 'cli' }));
    const sameIdOtherKind = await issue(store, grant({ subject, accountKind: 'admin' }));
    const otherSubject = await issue(store, grant());
    const rotatedFirst = await rotated(store, first, firstToken, { retry: retryFor() });

    await store.revokeSubject('user', subject);
    assert.deepEqual(await inspect(store, rotatedFirst), { state: 'revoked' });
    assert.deepEqual(await inspect(store, firstToken), { state: 'revoked' });
    assert.deepEqual(await inspect(store, second), { state: 'revoked' });
    assert.equal((await inspect(store, sameIdOtherKind)).state, 'current');
    assert.equal((await inspect(store, otherSubject)).state, 'current');

    // A login after the revocation starts a family that works.
    const fresh = await issue(store, grant({ subject }));
    assert.equal((await inspect(store, fresh)).state, 'current');
    await store.revokeSubject('admin' satisfies AccountKind, randomUUID());
  });

  test('a token whose grant already expired is unknown', async () => {
    const t = await issue(store, grant({ expiresAt: clock - 1000 }));
    assert.deepEqual(await inspect(store, t), { state: 'unknown' });
  });

  test('a family is unknown once it expires, rotated or not, revoked or not', async () => {
    const short = grant({ expiresAt: clock + 60 * SECOND });
    const shortToken = await issue(store, short);
    const used = grant({ expiresAt: clock + 60 * SECOND });
    const usedToken = await issue(store, used);
    const revoked = await issue(store, grant({ expiresAt: clock + 60 * SECOND }));
    const next = await rotated(store, used, usedToken, {
      expiresAt: clock + 60 * SECOND,
      retry: retryFor(30 * SECOND),
    });
    await store.revokeFamily(revoked.familyId);
    clock += 61 * SECOND;
    assert.deepEqual(await inspect(store, shortToken), { state: 'unknown' });
    assert.deepEqual(await inspect(store, usedToken), { state: 'unknown' });
    assert.deepEqual(await inspect(store, next), { state: 'unknown' });
    assert.deepEqual(await inspect(store, revoked), { state: 'unknown' });
    assert.deepEqual(await rotateAgain(store, short, shortToken), { state: 'unknown' });
  });

  test('a rotation extends the family past its first expiry', async () => {
    const g = grant({ expiresAt: clock + 60 * SECOND });
    const t = await issue(store, g);
    const next = await rotated(store, g, t, { expiresAt: clock + 120 * SECOND });
    clock += 61 * SECOND;
    assert.equal((await inspect(store, next)).state, 'current');
  });
}

/** The family's expiry, as its current token's grant says. */
async function expiryOf(store: RefreshTokenStore, t: Token): Promise<number | undefined> {
  const found = await inspect(store, t);
  return found.state === 'current' ? found.family.expiresAt : undefined;
}

describe('RefreshTokenStore: memory', () => {
  refreshTokenContract(async (now) => ({ store: new MemoryRefreshTokenStore(now), close: async () => {} }));
});

for (const { label, url: redisUrl } of redisTargets())
  describe(`RefreshTokenStore: Redis, ${label}`, {
    skip: redisUrl ? false : `no URL for Redis (${label}): real Redis contract not run`,
  }, () => {
    // A key prefix of its own per run, so concurrent runs never see each other's keys.
    const prefix = `${uniqueName('rt_test')}:`;
    let redis: RedisClient;

    refreshTokenContract(async (now) => {
      const connection = await connectTestRedis(redisUrl ?? '');
      redis = connection.client;
      // Behind Sentinels and in a Cluster, as the service runs there: writes acknowledged by a replica.
      const writer = label === 'one server' ? undefined : await connectTestRedis(redisUrl ?? '');
      return {
        store: new RedisRefreshTokenStore(redis, {
          prefix,
          now,
          writes: writer && acknowledgedWrites(writer.client, 1, 1000),
        }),
        async close() {
          await deleteKeys(redis, `${prefix}*`);
          await Promise.all([connection.close(), writer?.close()]);
        },
      };
    });

    /** The account's listing that holds the family. */
    async function listingOf(familyId: string): Promise<string> {
      const keys = await keysOf(redis, `${prefix}s:*`);
      const scores = await Promise.all(keys.map((key) => redis.zscore(key, familyId)));
      const key = keys[scores.findIndex((score) => score !== null)];
      assert.ok(key, 'the family is listed under its account');
      return key;
    }

    test('a family is one key however often it rotates, and one more during a retry window; the account index drops expired and revoked families', async () => {
      const store = new RedisRefreshTokenStore(redis, { prefix });
      const subject = randomUUID();
      const g = grant({ accountKind: 'admin', subject });
      let t = await issue(store, g);
      for (let i = 0; i < 20; i++) t = await rotated(store, g, t, { retry: retryFor(300) });
      const familyKey = `${prefix}{${g.familyId}}`;
      assert.deepEqual((await keysOf(redis, `${prefix}*${g.familyId}*`)).sort(), [
        familyKey,
        `${familyKey}:r`,
      ]);
      const retryTtl = await redis.pttl(`${familyKey}:r`);
      assert.ok(
        retryTtl > 0 && retryTtl <= 300,
        `the retry record expires with its window (pttl ${retryTtl})`,
      );
      await sleep(400);
      assert.deepEqual(await keysOf(redis, `${prefix}*${g.familyId}*`), [familyKey]);
      const subjectKeys = await keysOf(redis, `${prefix}s:*`);
      const subjectKey = (
        await Promise.all(subjectKeys.map(async (key) => ((await redis.zscore(key, g.familyId)) ? key : '')))
      ).find(Boolean);
      assert.ok(subjectKey, 'the family is listed under its account');
      assert.deepEqual(await redis.zrange(subjectKey, '0', '-1'), [g.familyId]);
      // The family lives 90 s from its last rotation; the account lists it for an eighth more.
      for (const [key, most] of [
        [`${prefix}{${g.familyId}}`, 90_000],
        [subjectKey, 90_000 * (9 / 8)],
      ] as const) {
        const ttl = await redis.pttl(key);
        assert.ok(ttl > 0 && ttl <= most, `${key} expires (pttl ${ttl})`);
      }

      const revoked = await issue(store, grant({ accountKind: 'admin', subject }));
      await issue(store, grant({ accountKind: 'admin', subject, expiresAt: Date.now() + 200 }));
      await store.revokeFamily(revoked.familyId);
      await sleep(300);
      // The next write to the account prunes the family that expired meanwhile.
      const fresh = await issue(store, grant({ accountKind: 'admin', subject }));
      assert.deepEqual(
        (await redis.zrange(subjectKey, '0', '-1')).sort(),
        [g.familyId, fresh.familyId].sort(),
      );
    });

    test('a rotation lists its family again only once the family would outlive its listing', async () => {
      const store = new RedisRefreshTokenStore(redis, { prefix, now });
      const g = grant({ expiresAt: clock + 80 * SECOND });
      let t = await issue(store, g);
      const subjectKey = await listingOf(g.familyId);
      // Listed for an eighth of its remaining lifetime beyond its expiry.
      const listed = clock + 90 * SECOND;
      assert.equal(Number(await redis.zscore(subjectKey, g.familyId)), listed);
      t = await rotated(store, g, t, { expiresAt: clock + 85 * SECOND });
      assert.equal(Number(await redis.zscore(subjectKey, g.familyId)), listed, 'within it: left alone');
      t = await rotated(store, g, t, { expiresAt: clock + 96 * SECOND });
      assert.equal(
        Number(await redis.zscore(subjectKey, g.familyId)),
        clock + 108 * SECOND,
        'past it: listed again',
      );
      t = await rotated(store, g, t, { expiresAt: clock + 100 * SECOND });
      assert.equal(Number(await redis.zscore(subjectKey, g.familyId)), clock + 108 * SECOND);
      await store.revokeSubject(g.accountKind, g.subject);
      assert.deepEqual(await inspect(store, t), { state: 'revoked' });
    });

    test('a listing that fails fails its rotation before the record says the family is listed', async () => {
      let listingFails = false;
      const run: ScriptWrites['run'] = (s, keys, args) =>
        listingFails && keys[0]?.startsWith(`${prefix}s:`)
          ? Promise.reject(new Error('the listing was lost'))
          : runScript(redis, s, keys, args);
      const writes: ScriptWrites = { acknowledged: false, run };
      const store = new RedisRefreshTokenStore(redis, { prefix, now, writes });
      const g = grant({ expiresAt: clock + 80 * SECOND });
      const t = await issue(store, g);
      const subjectKey = await listingOf(g.familyId);
      listingFails = true;
      const far = { ...g, expiresAt: clock + 200 * SECOND };
      await assert.rejects(store.rotate(far, t, { generation: 1, mac: mac() }), /the listing was lost/);
      assert.equal((await inspect(store, t)).state, 'current', 'nothing was rotated');
      assert.equal(Number(await redis.zscore(subjectKey, g.familyId)), clock + 90 * SECOND);
      listingFails = false;
      await rotated(store, g, t, { expiresAt: clock + 200 * SECOND });
      assert.equal(Number(await redis.zscore(subjectKey, g.familyId)), clock + 225 * SECOND);
    });

    test('revokeSubject leaves no revoked family listed, even one a racing rotation listed again', async () => {
      const store = new RedisRefreshTokenStore(redis, { prefix, now });
      const subject = randomUUID();
      const [live, revoked] = [grant({ subject }), grant({ subject })];
      await issue(store, live);
      await issue(store, revoked);
      await store.revokeFamily(revoked.familyId);
      const keys = await keysOf(redis, `${prefix}s:*`);
      const scores = await Promise.all(keys.map((key) => redis.zscore(key, live.familyId)));
      const subjectKey = keys[scores.findIndex((score) => score !== null)];
      assert.ok(subjectKey, 'the account is listed');
      // A rotation's listing, sent before the revocation and applied after it.
      await redis.zadd(subjectKey, revoked.expiresAt, revoked.familyId);
      await store.revokeSubject(live.accountKind, subject);
      assert.deepEqual(await redis.zrange(subjectKey, '0', '-1'), []);
    });

    test('families kept as hashes by an earlier version are read, and written as records from their first change', async () => {
      const store = new RedisRefreshTokenStore(redis, { prefix, now });
      const g = grant({ expiresAt: clock + 60 * SECOND });
      const [replaced, current] = [mac(), mac()];
      const familyKey = `${prefix}{${g.familyId}}`;
      await redis.hset(familyKey, {
        g: 1,
        m: current,
        s: 'u',
        e: g.expiresAt,
        c: g.clientId,
        k: g.accountKind,
        u: g.subject,
        sc: g.scope,
        st: g.credentialStamp,
      });
      await redis.hset(`${familyKey}:r`, {
        m: replaced,
        x: 'sealed-earlier',
        e: clock + 5 * SECOND,
        l: clock + 300 * SECOND,
      });
      const [first, second] = [
        { familyId: g.familyId, generation: 0, mac: replaced },
        { familyId: g.familyId, generation: 1, mac: current },
      ];
      assert.deepEqual(await inspect(store, first), {
        state: 'retry',
        family: g,
        sealedSuccessor: 'sealed-earlier',
      });
      assert.deepEqual(await inspect(store, second), { state: 'current', family: g });
      const third = await rotated(store, g, second, { retry: retryFor() });
      assert.equal(await redis.type(familyKey), 'string');
      assert.equal((await inspect(store, third)).state, 'current');
      assert.equal((await inspect(store, second)).state, 'retry');

      const revoked = grant();
      await redis.hset(`${prefix}{${revoked.familyId}}`, {
        g: 0,
        m: mac(),
        s: 'r',
        e: revoked.expiresAt,
        c: 'web',
      });
      assert.deepEqual(await inspect(store, { familyId: revoked.familyId, generation: 0, mac: mac() }), {
        state: 'revoked',
      });
    });

    describe('behind replicas whose confirmation the test decides', () => {
      /** A rotation's script ran on the primary; its answer waits for the test's verdict. */
      interface Held {
        confirm(): void;
        fail(): void;
      }
      let held: Held[];
      /** Whether the next write of a family's record is held: a rotation's, never a sign-in's. */
      let holding = false;
      /** The writes that end an answer's wait, held until the test releases them, while `holdingLater`. */
      let later: (() => void)[];
      let holdingLater = false;
      /**
       * The store's connection: its scripts are those that no answer waits for (the others go
       * through `writes`), held while `holdingLater`.
       */
      const connection = (): RedisClient =>
        new Proxy(redis, {
          get(target, property) {
            const value: unknown = Reflect.get(target, property, target);
            if (property !== 'evalsha' || typeof value !== 'function') return value;
            return async (...args: unknown[]) => {
              if (holdingLater) await new Promise<void>((release) => later.push(release));
              return Reflect.apply(value, target, args);
            };
          },
        });
      let store: RedisRefreshTokenStore;
      const WINDOW = 60 * SECOND;
      const LIMIT = MAX_REFRESH_TOKEN_RETRY_SECONDS * SECOND;

      beforeEach(() => {
        held = [];
        later = [];
        holdingLater = false;
        // As acknowledgedWrites: each write runs at once and counts once confirmed. The
        // account index is confirmed at once; a rotation's write of the family's two keys
        // when the test says.
        const writes: ScriptWrites = {
          acknowledged: true,
          async run(s, keys, args) {
            const reply = await runScript(redis, s, keys, args);
            if (keys.length !== 2 || !holding) return reply;
            holding = false;
            return new Promise((resolve, reject) =>
              held.push({ confirm: () => resolve(reply), fail: () => reject(new NotReplicated('Redis')) }),
            );
          },
        };
        store = new RedisRefreshTokenStore(connection(), { prefix, now, writes });
      });

      /** The rotation presented next, its script run and its answer held. */
      async function heldRotation(g: RefreshTokenFamily, t: Token) {
        const before = held.length;
        holding = true;
        const result = rotateAgain(store, g, t, retryFor(WINDOW));
        while (held.length === before) await new Promise((resolve) => setImmediate(resolve));
        const answer = held[before];
        if (!answer) throw new Error('no rotation held');
        return { result, answer };
      }

      /** A family whose first token was rotated and that rotation answered. */
      async function answeredRotation() {
        const g = grant({ expiresAt: clock + 2 * 86_400 * SECOND });
        const t = await issue(store, g);
        const { result, answer } = await heldRotation(g, t);
        answer.confirm();
        assert.equal((await result).state, 'rotated');
        return { g, t };
      }

      test("a confirmed answer does not wait for the write that starts its window; this process's next read of the family does", async () => {
        const g = grant({ expiresAt: clock + 2 * 86_400 * SECOND });
        const t = await issue(store, g);
        holdingLater = true;
        const { result, answer } = await heldRotation(g, t);
        answer.confirm();
        assert.equal((await result).state, 'rotated', 'answered with the write that starts the window held');
        assert.equal(later.length, 1);
        let read = false;
        const state = inspect(store, t).then((found) => {
          read = true;
          return found.state;
        });
        let drained = false;
        const draining = store.drain().then(() => {
          drained = true;
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(read, false, 'the read waits for the write that starts the window');
        assert.equal(drained, false, 'so does a drain before the connections close');
        for (const release of later) release();
        await draining;
        assert.equal(await state, 'retry');
        clock += WINDOW + SECOND;
        assert.equal((await inspect(store, t)).state, 'reused', 'the window started: the mark is gone');
      });

      test('a retry that fails after the rotation was answered leaves the window running from then, not open for good', async () => {
        const { g, t } = await answeredRotation();
        clock += 10 * SECOND;
        const { result, answer } = await heldRotation(g, t);
        answer.fail();
        await assert.rejects(result, NotReplicated);
        clock += WINDOW - SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        clock += 2 * SECOND;
        assert.equal((await inspect(store, t)).state, 'reused');
      });

      test("a rotation answered after a retry took over its wait still sets the limit, so the retry's failure cannot keep the token a retry for good", async () => {
        const g = grant({ expiresAt: clock + 5 * 86_400 * SECOND });
        const t = await issue(store, g);
        const rotation = await heldRotation(g, t);
        const retry = await heldRotation(g, t);
        rotation.answer.confirm();
        assert.equal((await rotation.result).state, 'rotated');
        retry.answer.fail();
        await assert.rejects(retry.result, NotReplicated);
        clock += WINDOW - SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        clock += LIMIT;
        assert.equal((await inspect(store, t)).state, 'reused');
      });

      test("an older retry's failure leaves a newer retry's wait alone", async () => {
        const { g, t } = await answeredRotation();
        const older = await heldRotation(g, t);
        const newer = await heldRotation(g, t);
        clock += 2 * WINDOW;
        older.answer.fail();
        await assert.rejects(older.result, NotReplicated);
        // Had the older one ended the wait, the window would end a WINDOW from its failure.
        clock += WINDOW + SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        newer.answer.confirm();
        assert.equal((await newer.result).state, 'retry');
        clock += WINDOW - SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        clock += 2 * SECOND;
        assert.equal((await inspect(store, t)).state, 'reused');
      });

      test('a rotation never answered stays retryable however long, its failed retries included; the first answer starts the window', async () => {
        const g = grant({ expiresAt: clock + 5 * 86_400 * SECOND });
        const t = await issue(store, g);
        for (const after of [0, 10 * WINDOW, 86_400 * SECOND]) {
          clock += after;
          const { result, answer } = await heldRotation(g, t);
          answer.fail();
          await assert.rejects(result, NotReplicated);
        }
        clock += 86_400 * SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        const { result, answer } = await heldRotation(g, t);
        answer.confirm();
        assert.equal((await result).state, 'retry');
        clock += WINDOW + SECOND;
        assert.equal((await inspect(store, t)).state, 'reused');
      });

      /** Confirmed retries every 50 s, as long as the limit of the rotation answered now allows. */
      async function retriedToTheLimit(g: RefreshTokenFamily, t: Token): Promise<number> {
        const limit = clock + LIMIT;
        while (clock + 50 * SECOND < limit) {
          clock += 50 * SECOND;
          const { result, answer } = await heldRotation(g, t);
          answer.confirm();
          assert.equal((await result).state, 'retry');
        }
        return limit;
      }

      test('confirmed retries start the window again, never past the limit the first answer set', async () => {
        const { g, t } = await answeredRotation();
        const limit = await retriedToTheLimit(g, t);
        clock = limit - SECOND;
        assert.equal((await inspect(store, t)).state, 'retry');
        clock = limit + SECOND;
        assert.equal((await inspect(store, t)).state, 'reused');
      });

      test('an answer still waiting past the limit an earlier answer set does not keep the token a retry', async () => {
        const { g, t } = await answeredRotation();
        const limit = await retriedToTheLimit(g, t);
        clock = limit - 5 * SECOND;
        const waiting = await heldRotation(g, t);
        assert.equal((await inspect(store, t)).state, 'retry');
        clock = limit + SECOND;
        assert.equal((await inspect(store, t)).state, 'reused');
        waiting.answer.confirm();
        await waiting.result;
        assert.equal((await inspect(store, t)).state, 'reused');
      });
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
    for (let i = 0; i < 20; i++) t = await rotated(store, g, t, { expiresAt: now + MINUTE });
    assert.deepEqual(store.footprint(), { families: 1, accountIndex: 1 });

    for (let i = 1; i < SWEEP_EVERY; i++)
      await store.create(grant({ expiresAt: now + MINUTE }), { generation: 0, mac: mac() });
    assert.deepEqual(store.footprint(), { families: SWEEP_EVERY, accountIndex: SWEEP_EVERY });
    now += 2 * MINUTE;
    const fresh = await issue(store, grant({ expiresAt: now + MINUTE }));
    for (let i = 0; i < 20; i++)
      await store.create(grant({ expiresAt: now + MINUTE }), { generation: 0, mac: mac() });
    assert.deepEqual(store.footprint(), { families: 21, accountIndex: 21 });
    assert.equal((await inspect(store, fresh)).state, 'current');
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
    assert.deepEqual(await inspect(store, live), { state: 'revoked' });
  });
});
