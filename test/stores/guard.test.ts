/**
 * The guard every real backend's stores sit behind: an outage of that backend becomes 503
 * (BackendUnavailable); everything else reaches the caller as it was thrown.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackendUnavailable, DuplicateIdentity } from '../../src/errors.ts';
import { watchBackend } from '../../src/stores/backend-health.ts';
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

/** A backend whose health the test sets, counting what the guard reports to it. */
function fakeBackend(outage: (error: unknown) => boolean = isOutage) {
  const backend = {
    name: 'Fake',
    down: false,
    answers: 0,
    outages: 0,
    isOutage: outage,
    isDown: () => backend.down,
    answered: () => void backend.answers++,
    failedWithOutage: () => void backend.outages++,
    stop() {},
  };
  return backend;
}

describe('guard', () => {
  test('a method runs on the store itself and returns what it returns', async () => {
    const store = guard(new FakeStore(), fakeBackend());
    assert.equal(await store.count(), 1);
    assert.equal(await store.count(), 2);
    assert.equal(store.label, 'fake');
  });

  test('an outage becomes BackendUnavailable naming the backend, the driver error kept as cause', async () => {
    const outage = new Outage('connection refused');
    await assert.rejects(guard(new FakeStore(), fakeBackend()).fail(outage), (error: unknown) => {
      assert.ok(error instanceof BackendUnavailable);
      assert.equal(error.status, 503);
      assert.match(error.message, /Fake/);
      assert.equal(error.cause, outage);
      return true;
    });
  });

  test('problems and errors that are not outages pass unchanged', async () => {
    const store = guard(
      new FakeStore(),
      fakeBackend(() => true),
    );
    const duplicate = new DuplicateIdentity('ada@example.com');
    await assert.rejects(store.fail(duplicate), (error) => error === duplicate);
    const bug = new TypeError('not an outage');
    await assert.rejects(guard(new FakeStore(), fakeBackend()).fail(bug), (error) => error === bug);
  });

  test('guardEach guards every store of the set', async () => {
    const stores = guardEach({ a: new FakeStore(), b: new FakeStore() }, fakeBackend());
    for (const store of [stores.a, stores.b]) {
      await assert.rejects(store.fail(new Outage('down')), BackendUnavailable);
    }
  });

  test('while the backend is known to be down, a call is refused at once without being tried', async () => {
    const backend = fakeBackend();
    const store = guard(new FakeStore(), backend);
    backend.down = true;
    await assert.rejects(
      store.count(),
      (error: unknown) => error instanceof BackendUnavailable && /Fake/.test(error.message),
    );
    backend.down = false;
    assert.equal(await store.count(), 1, 'the refused call never ran');
  });

  test('reports each answer and each outage to the backend health', async () => {
    const backend = fakeBackend();
    const store = guard(new FakeStore(), backend);
    await store.count();
    await assert.rejects(store.fail(new TypeError('a bug is an answer')));
    await assert.rejects(store.fail(new Outage('down')));
    assert.deepEqual([backend.answers, backend.outages], [2, 1]);
  });
});

describe('watchBackend', () => {
  const until = async (condition: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!condition()) {
      assert.ok(Date.now() < deadline, 'condition not reached within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  test('down after a failed heartbeat, up again after one succeeds', async () => {
    let healthy = true;
    const health = watchBackend({
      name: 'Fake',
      isOutage,
      ping: async () => {
        if (!healthy) throw new Outage('no pong');
      },
    });
    try {
      assert.equal(health.isDown(), false);
      healthy = false;
      await until(() => health.isDown());
      healthy = true;
      await until(() => !health.isDown());
    } finally {
      health.stop();
    }
  });

  test('a ping that throws before it returns a promise is a failed heartbeat, not a crash', async () => {
    const health = watchBackend({
      name: 'Fake',
      isOutage,
      ping: () => {
        throw new Outage('client closed');
      },
    });
    try {
      await until(() => health.isDown());
    } finally {
      health.stop();
    }
  });

  test('a ping that never answers is a failed heartbeat', async () => {
    const health = watchBackend({ name: 'Fake', isOutage, ping: () => new Promise(() => {}) });
    try {
      await until(() => health.isDown());
    } finally {
      health.stop();
    }
  });

  test('down after three outages in a row; an answer between them resets the count', async () => {
    const health = watchBackend({ name: 'Fake', isOutage, ping: () => new Promise(() => {}) });
    health.stop();
    health.failedWithOutage();
    health.failedWithOutage();
    health.answered();
    health.failedWithOutage();
    health.failedWithOutage();
    assert.equal(health.isDown(), false);
    health.failedWithOutage();
    assert.equal(health.isDown(), true);
  });
});
