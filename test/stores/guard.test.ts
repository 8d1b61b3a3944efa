/**
 * The guard every real backend's stores sit behind: an outage of that backend becomes 503
 * (BackendUnavailable); everything else reaches the caller as it was thrown.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackendUnavailable, DuplicateIdentity } from '../../src/errors.ts';
import { guard, guardEach } from '../../src/stores/guard.ts';

class Outage extends Error {}

/** A store that keeps its state in a #private field, as the real ones do, and fails on demand. */
class FakeStore {
  readonly label = 'fake';
  #calls = 0;
  async count(): Promise<number> {
    return ++this.#calls;
  }
  async fail(error: unknown): Promise<never> {
    throw error;
  }
}

const isOutage = (error: unknown) => error instanceof Outage;

describe('guard', () => {
  test('a method runs on the store itself and returns what it returns', async () => {
    const store = guard(new FakeStore(), 'Fake', isOutage);
    assert.equal(await store.count(), 1);
    assert.equal(await store.count(), 2);
    assert.equal(store.label, 'fake');
  });

  test('an outage becomes BackendUnavailable naming the backend, the driver error kept as cause', async () => {
    const outage = new Outage('connection refused');
    await assert.rejects(guard(new FakeStore(), 'Fake', isOutage).fail(outage), (error: unknown) => {
      assert.ok(error instanceof BackendUnavailable);
      assert.equal(error.status, 503);
      assert.match(error.message, /Fake/);
      assert.equal(error.cause, outage);
      return true;
    });
  });

  test('problems and errors that are not outages pass unchanged', async () => {
    const store = guard(new FakeStore(), 'Fake', () => true);
    const duplicate = new DuplicateIdentity('ada@example.com');
    await assert.rejects(store.fail(duplicate), (error) => error === duplicate);
    const bug = new TypeError('not an outage');
    await assert.rejects(guard(new FakeStore(), 'Fake', isOutage).fail(bug), (error) => error === bug);
  });

  test('guardEach guards every store of the set', async () => {
    const stores = guardEach({ a: new FakeStore(), b: new FakeStore() }, 'Fake', isOutage);
    for (const store of [stores.a, stores.b]) {
      await assert.rejects(store.fail(new Outage('down')), BackendUnavailable);
    }
  });
});
