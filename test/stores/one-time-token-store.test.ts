import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OneTimeTokenPurpose, OneTimeTokenStore } from '../../src/accounts/model.ts';
import { digestOneTimeSecret, newOneTimeSecret } from '../../src/one-time-secrets.ts';
import { MemoryOneTimeTokenStore } from '../../src/stores/memory/one-time-tokens.ts';
import {
  MongoOneTimeTokenStore,
  ONE_TIME_TOKENS_COLLECTION,
  type OneTimeTokenDoc,
} from '../../src/stores/mongo/one-time-tokens.ts';
import { mongoSkipped, withMongoTestDatabase } from '../support/mongo.ts';
import { describeStoreContract } from '../support/store-contract.ts';
import { openTestStores } from '../support/stores.ts';

/** A store whose clock the test sets. */
interface Subject {
  store: OneTimeTokenStore;
  clock: { now: number };
}

const HOUR = 3_600_000;

describeStoreContract<Subject>(
  'OneTimeTokenStore',
  {
    memory() {
      const clock = { now: Date.now() };
      return { clock, store: new MemoryOneTimeTokenStore(() => clock.now) };
    },
    mongo: {
      database: 'one_time_tokens',
      collections: [ONE_TIME_TOKENS_COLLECTION],
      stores(db) {
        const clock = { now: Date.now() };
        const collection = db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION);
        return { clock, store: new MongoOneTimeTokenStore(collection, { now: () => new Date(clock.now) }) };
      },
    },
  },
  (h) => {
    const token = (purpose: OneTimeTokenPurpose, accountId: string, ttl = HOUR) => ({
      purpose,
      digest: newOneTimeSecret().digest,
      accountId,
      expiresAt: new Date(h.clock.now + ttl),
    });

    test('a saved token is found until it is consumed, and consumed once', async () => {
      const saved = token('activation', 'acc-1');
      await h.store.save(saved);
      assert.deepEqual(await h.store.find('activation', saved.digest), saved);
      assert.equal(await h.store.find('reset', saved.digest), null, 'the purpose must match');
      assert.equal(await h.store.consume('reset', saved.digest), null);
      assert.deepEqual(await h.store.consume('activation', saved.digest), saved);
      assert.equal(await h.store.consume('activation', saved.digest), null);
      assert.equal(await h.store.find('activation', saved.digest), null);
    });

    test('of many concurrent consumes of one token exactly one succeeds', async () => {
      // Several rounds: a non-atomic consume (findOneAndDelete on FerretDB 1.x) fails only some of the time.
      for (let round = 0; round < 20; round++) {
        const saved = token('reset', `acc-2-${round}`);
        await h.store.save(saved);
        const results = await Promise.all(
          Array.from({ length: 10 }, () => h.store.consume('reset', saved.digest)),
        );
        assert.equal(results.filter(Boolean).length, 1, `round ${round}`);
      }
    });

    test('a change of address link keeps the new identity, and its purpose apart', async () => {
      const saved = { ...token('identity-change', 'acc-6'), newIdentity: 'New.Address@example.com' };
      const reset = token('reset', 'acc-6');
      await h.store.save(saved);
      await h.store.save(reset);
      assert.deepEqual(await h.store.find('identity-change', saved.digest), saved);
      assert.equal(await h.store.find('reset', saved.digest), null);
      assert.deepEqual(await h.store.find('reset', reset.digest), reset, 'no new identity on other tokens');
      await h.store.deleteForAccount('acc-6', 'reset');
      assert.deepEqual(await h.store.consume('identity-change', saved.digest), saved);
      const other = { ...token('identity-change', 'acc-6'), newIdentity: 'other@example.com' };
      await h.store.save(other);
      await h.store.deleteForAccount('acc-6');
      assert.equal(await h.store.find('identity-change', other.digest), null, 'all purposes go');
    });

    test('a link put back keeps the wrong passwords counted with it', async () => {
      const saved = { ...token('identity-change', 'acc-9'), newIdentity: 'counted@example.com' };
      await h.store.save(saved);
      const taken = await h.store.consume('identity-change', saved.digest);
      assert.deepEqual(taken, saved);
      await h.store.save({ ...saved, wrongPasswords: 3 });
      assert.deepEqual(await h.store.find('identity-change', saved.digest), { ...saved, wrongPasswords: 3 });
      assert.deepEqual(await h.store.consume('identity-change', saved.digest), {
        ...saved,
        wrongPasswords: 3,
      });
    });

    test('an expired token is neither found nor consumed', async () => {
      const saved = token('reset', 'acc-3', 1000);
      await h.store.save(saved);
      h.clock.now += 1000;
      assert.equal(await h.store.find('reset', saved.digest), null);
      assert.equal(await h.store.consume('reset', saved.digest), null);
    });

    test("deleteForAccount forgets the account's tokens, of one purpose or all", async () => {
      const activation = token('activation', 'acc-4');
      const reset = token('reset', 'acc-4');
      const otherAccount = token('reset', 'acc-5');
      for (const t of [activation, reset, otherAccount]) await h.store.save(t);
      await h.store.deleteForAccount('acc-4', 'reset');
      assert.equal(await h.store.find('reset', reset.digest), null);
      assert.ok(await h.store.find('activation', activation.digest));
      await h.store.deleteForAccount('acc-4');
      assert.equal(await h.store.find('activation', activation.digest), null);
      assert.ok(await h.store.find('reset', otherAccount.digest));
    });

    test('only digests are stored: the digest of a hash is its SHA-256, and differs from it', () => {
      const { secret: hash, digest } = newOneTimeSecret();
      assert.match(hash, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(digest, digestOneTimeSecret(hash));
      assert.match(digest, /^[0-9a-f]{64}$/);
    });
  },
);

test('openStores keeps one-time tokens in MongoDB beside the accounts', { skip: mongoSkipped }, async () => {
  await withMongoTestDatabase('one_time_tokens_open', async ({ url }) => {
    const stores = await openTestStores({ mongodbUrl: url });
    const store = stores.oneTimeTokens;
    const saved = {
      purpose: 'activation' as const,
      digest: newOneTimeSecret().digest,
      accountId: 'x',
      expiresAt: new Date(Date.now() + HOUR),
    };
    await store.save(saved);
    assert.deepEqual(await store.consume('activation', saved.digest), saved);
    await stores.close();
  });
});
