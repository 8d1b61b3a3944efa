/**
 * The CodeFlowStore contract (used sign-in form values and authorization codes), run
 * against the memory store always and against Redis when REDIS_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { AuthorizationCodeGrant, CodeFlowStore } from '../../src/oauth/model.ts';
import { digestOneTimeSecret, newOneTimeSecret } from '../../src/one-time-secrets.ts';
import { MemoryCodeFlowStore } from '../../src/stores/memory/code-flow.ts';
import { RedisCodeFlowStore } from '../../src/stores/redis/code-flow.ts';
import type { RedisClient } from '../../src/stores/redis/connect.ts';
import { uniqueName } from '../support/backends.ts';
import { connectTestRedis, deleteKeys, keysOf, redisTargets } from '../support/redis.ts';

interface Harness {
  store: CodeFlowStore;
  /** The store's clock, which `advance` moves forward. */
  now(): number;
  advance(ms: number): void;
  close(): Promise<void>;
}

const digest = () => newOneTimeSecret().digest;

function code(overrides: Partial<AuthorizationCodeGrant> = {}): AuthorizationCodeGrant {
  return {
    clientId: randomUUID(),
    redirectUri: 'https://app.example.test/callback',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    accountKind: 'user',
    subject: randomUUID(),
    scope: 'api',
    credentialStamp: 'stamp',
    familyId: randomUUID(),
    expiresAt: Date.now() + 60_000,
    ...overrides,
  };
}

function codeFlowContract(open: () => Promise<Harness>): void {
  let h: Harness;
  before(async () => {
    h = await open();
  });
  after(async () => {
    await h?.close();
  });

  test('a one-time value is used once', async () => {
    const id = randomUUID();
    assert.equal(await h.store.useOnce(id, h.now() + 60_000), true);
    assert.equal(await h.store.useOnce(id, h.now() + 60_000), false);
    assert.equal(await h.store.useOnce(randomUUID(), h.now() + 60_000), true);
  });

  test('of 20 concurrent uses of one value exactly one succeeds', async () => {
    const id = randomUUID();
    const uses = await Promise.all(Array.from({ length: 20 }, () => h.store.useOnce(id, h.now() + 60_000)));
    assert.equal(uses.filter(Boolean).length, 1);
  });

  test('a code is found until it expires, consumed once, and reused every time after', async () => {
    const d = digest();
    const grant = code();
    await h.store.saveCode(d, grant);
    assert.deepEqual(await h.store.findCode(d), grant);
    assert.equal(await h.store.wasReused(d), false);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'consumed');
    assert.deepEqual(await h.store.findCode(d), grant, 'a used code is still known');
    assert.equal(await h.store.wasReused(d), false, 'consumed once is not reused');
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'reused');
    assert.equal(await h.store.wasReused(d), true);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'reused');
  });

  test('a code its attempt releases is consumed again; not once presented again, nor by a release arriving late', async () => {
    const d = digest();
    await h.store.saveCode(d, code());
    const first = randomUUID();
    assert.equal(await h.store.consumeCode(d, first), 'consumed');
    await h.store.releaseCode(d, first);
    assert.equal(await h.store.wasReused(d), false);
    const second = randomUUID();
    assert.equal(await h.store.consumeCode(d, second), 'consumed', 'released, it is usable once more');
    await h.store.releaseCode(d, first);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'reused', 'an earlier attempt releases nothing');
    await h.store.releaseCode(d, second);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'reused', 'a replay keeps it used');
    assert.equal(await h.store.wasReused(d), true);

    const unknown = digest();
    await h.store.releaseCode(unknown, first);
    assert.equal(await h.store.findCode(unknown), null, 'releasing an unknown code makes none');
    assert.equal(await h.store.consumeCode(unknown, first), 'unknown');
  });

  test('an unknown or expired code is unknown, and was never reused', async () => {
    assert.equal(await h.store.findCode(digest()), null);
    assert.equal(await h.store.consumeCode(digest(), randomUUID()), 'unknown');
    const d = digest();
    await h.store.saveCode(d, code({ expiresAt: h.now() + 1000 }));
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'consumed');
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'reused');
    h.advance(1000);
    assert.equal(await h.store.findCode(d), null);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'unknown');
    assert.equal(await h.store.wasReused(d), false);
  });

  test('of 20 concurrent consumes of one code exactly one wins; the others mark it reused', async () => {
    const d = digest();
    await h.store.saveCode(d, code());
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => h.store.consumeCode(d, randomUUID())),
    );
    assert.equal(outcomes.filter((outcome) => outcome === 'consumed').length, 1);
    assert.equal(outcomes.filter((outcome) => outcome === 'reused').length, 19);
    assert.equal(await h.store.wasReused(d), true);
  });

  test('used values and codes are apart: one id of each', async () => {
    const d = digest();
    assert.equal(await h.store.useOnce(d, h.now() + 60_000), true);
    assert.equal(await h.store.findCode(d), null);
    assert.equal(await h.store.consumeCode(d, randomUUID()), 'unknown');
  });
}

describe('CodeFlowStore: memory', () => {
  codeFlowContract(async () => {
    let offset = 0;
    const now = () => Date.now() + offset;
    return {
      store: new MemoryCodeFlowStore(now),
      now,
      advance(ms) {
        offset += ms;
      },
      async close() {},
    };
  });

  test('expired records are swept when new ones are saved', async () => {
    let now = Date.now();
    const store = new MemoryCodeFlowStore(() => now);
    const old = digest();
    await store.saveCode(old, code({ expiresAt: now + 1000 }));
    now += 1000;
    await store.saveCode(digest(), code({ expiresAt: now + 1000 }));
    now -= 1000;
    // Had it been kept, the earlier clock would find it again.
    assert.equal(await store.findCode(old), null);
  });
});

for (const { label, url: redisUrl } of redisTargets())
  describe(`CodeFlowStore: Redis, ${label}`, {
    skip: redisUrl ? false : `no URL for Redis (${label}): real Redis contract not run`,
  }, () => {
    // A key prefix of its own per run, so concurrent runs never see each other's keys.
    const prefix = `${uniqueName('authz_test')}:`;
    let redis: RedisClient;

    codeFlowContract(async () => {
      const connection = await connectTestRedis(redisUrl ?? '');
      redis = connection.client;
      let offset = 0;
      const now = () => Date.now() + offset;
      return {
        store: new RedisCodeFlowStore(redis, { prefix, now }),
        now,
        advance(ms) {
          offset += ms;
        },
        async close() {
          await deleteKeys(redis, `${prefix}*`);
          await connection.close();
        },
      };
    });

    test('beside an earlier version: a code either consumes reads as used to the other', async () => {
      const store = new RedisCodeFlowStore(redis, { prefix });
      const ours = digest();
      await store.saveCode(ours, code());
      assert.equal(await store.consumeCode(ours, randomUUID()), 'consumed');
      assert.equal(await redis.hget(`${prefix}c:${ours}`, 'used'), '1', 'as earlier versions mark it');
      const theirs = digest();
      await store.saveCode(theirs, code());
      await redis.hset(`${prefix}c:${theirs}`, 'used', '1');
      await store.releaseCode(theirs, randomUUID());
      assert.equal(await store.consumeCode(theirs, randomUUID()), 'reused', 'no attempt of ours releases it');
      const unknown = digest();
      await store.releaseCode(unknown, randomUUID());
      assert.equal(await redis.exists(`${prefix}c:${unknown}`), 0, 'releasing an unknown code writes no key');
    });

    test('every key is under the prefix, a code named by its digest only, and expires with its record', async () => {
      const store = new RedisCodeFlowStore(redis, { prefix });
      const { secret, digest: d } = newOneTimeSecret();
      assert.equal(d, digestOneTimeSecret(secret));
      await store.useOnce(d, Date.now() + 30_000);
      await store.saveCode(d, code({ expiresAt: Date.now() + 30_000 }));
      const keys = (await keysOf(redis, `${prefix}*${d}`)).sort();
      assert.deepEqual(keys, [`${prefix}c:${d}`, `${prefix}u:${d}`]);
      for (const key of keys) {
        const ttl = await redis.pttl(key);
        assert.ok(ttl > 0 && ttl <= 30_000, `${key} expires (pttl ${ttl})`);
        assert.ok(!key.includes(secret));
      }
    });
  });
