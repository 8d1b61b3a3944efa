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

    test('a link keeps the address it was mailed to, through find, consume and put back', async () => {
      const saved = { ...token('reset', 'acc-13'), mailedTo: 'Mailed.To@example.com' };
      await h.store.save(saved);
      assert.deepEqual(await h.store.find('reset', saved.digest), saved);
      const taken = await h.store.consume('reset', saved.digest);
      assert.deepEqual(taken, saved);
      await h.store.putBack(saved);
      assert.deepEqual(await h.store.consume('reset', saved.digest), saved);
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

    test("a token taken before its account's links were killed stays dead when put back", async () => {
      const change = { ...token('identity-change', 'acc-10'), newIdentity: 'stranger@example.com' };
      const reset = token('reset', 'acc-10');
      const activation = token('activation', 'acc-10');
      for (const t of [change, reset, activation]) await h.store.save(t);
      const takenChange = await h.store.consume('identity-change', change.digest);
      const takenReset = await h.store.consume('reset', reset.digest);
      const takenActivation = await h.store.consume('activation', activation.digest);
      assert.ok(takenChange && takenReset && takenActivation);
      await h.store.deleteForAccount('acc-10', 'reset');
      await h.store.putBack(takenReset);
      assert.equal(await h.store.find('reset', reset.digest), null, 'killed by its purpose');
      assert.equal(await h.store.consume('reset', reset.digest), null);
      await h.store.putBack({ ...takenActivation, wrongPasswords: 1 });
      assert.ok(await h.store.find('activation', activation.digest), 'another purpose lives on');
      await h.store.deleteForAccount('acc-10');
      await h.store.putBack({ ...takenChange, wrongPasswords: 1 });
      assert.equal(await h.store.find('identity-change', change.digest), null, 'killed with every link');
      assert.equal(await h.store.consume('identity-change', change.digest), null);
      assert.equal(await h.store.find('activation', activation.digest), null, 'killed while it was stored');

      const later = token('reset', 'acc-10');
      await h.store.save(later);
      assert.ok(await h.store.find('reset', later.digest), 'a link issued after the kill works');
      const takenLater = await h.store.consume('reset', later.digest);
      assert.ok(takenLater);
      await h.store.putBack(takenLater);
      assert.ok(await h.store.consume('reset', later.digest), 'and is put back alive');
    });

    test('a token put back with the generation its kill returned lives, until the next kill', async () => {
      const change = { ...token('identity-change', 'acc-11'), newIdentity: 'owner@example.com' };
      const reset = token('reset', 'acc-11');
      await h.store.save(change);
      await h.store.save(reset);
      const taken = await h.store.consume('identity-change', change.digest);
      assert.ok(taken);
      const generation = await h.store.deleteForAccount('acc-11');
      await h.store.putBack({ ...taken, generation });
      assert.equal(await h.store.find('reset', reset.digest), null, 'the other link died');
      const again = await h.store.consume('identity-change', change.digest);
      assert.deepEqual(again, { ...change, generation });
      await h.store.putBack(again);
      await h.store.deleteForAccount('acc-11', 'identity-change');
      assert.equal(await h.store.find('identity-change', change.digest), null);
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

test('on MongoDB a consume deletes only the copy it read: a count put back meanwhile is not lost', {
  skip: mongoSkipped,
}, async () => {
  await withMongoTestDatabase('one_time_tokens_copy', async ({ db }) => {
    const collection = db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION);
    // B's deleteOne waits until A has consumed the link and put it back with one more wrong password.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reached: () => void = () => undefined;
    const deleting = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const gated = new Proxy(collection, {
      get(target, property, receiver) {
        if (property !== 'deleteOne') return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof target.deleteOne>) => {
          reached();
          await gate;
          return target.deleteOne(...args);
        };
      },
    });
    const storeA = new MongoOneTimeTokenStore(collection);
    const storeB = new MongoOneTimeTokenStore(gated);
    const saved = {
      purpose: 'identity-change' as const,
      digest: newOneTimeSecret().digest,
      accountId: 'acc-12',
      expiresAt: new Date(Date.now() + HOUR),
      newIdentity: 'counted@example.com',
      wrongPasswords: 3,
    };
    await storeA.save(saved);
    const b = storeB.consume('identity-change', saved.digest);
    await deleting;
    const a = await storeA.consume('identity-change', saved.digest);
    assert.deepEqual(a, saved);
    await storeA.putBack({ ...saved, wrongPasswords: 4 });
    release();
    assert.equal(await b, null, 'B read a copy that is gone');
    assert.deepEqual(await storeA.consume('identity-change', saved.digest), { ...saved, wrongPasswords: 4 });
  });
});
