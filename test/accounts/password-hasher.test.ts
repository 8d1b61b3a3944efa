import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createPasswordHasher } from '../../src/accounts/password-hasher.ts';

describe('password hasher (bcrypt in worker threads)', () => {
  const hasher = createPasswordHasher({ cost: 4, threads: 2 });
  after(() => hasher.close());

  test('hashes at the configured cost and verifies', async () => {
    const hash = await hasher.hash('correct horse battery');
    assert.match(hash, /^\$2[ab]\$04\$/);
    assert.equal(await hasher.verify('correct horse battery', hash), true);
    assert.equal(await hasher.verify('wrong', hash), false);
    await hasher.verifyNothing('anything');
  });

  test('more jobs than threads queue up and all complete', async () => {
    const hashes = await Promise.all(Array.from({ length: 12 }, (_, i) => hasher.hash(`password-${i}`)));
    const checks = await Promise.all(hashes.map((hash, i) => hasher.verify(`password-${i}`, hash)));
    assert.deepEqual(checks, Array(12).fill(true));
  });

  test('a malformed stored hash simply does not verify', async () => {
    assert.equal(await hasher.verify('x', 'not-a-bcrypt-hash'), false);
    assert.equal(await hasher.verify('y', await hasher.hash('y')), true);
  });

  test('the event loop stays free while hashing', async () => {
    const slow = createPasswordHasher({ cost: 10, threads: 1 });
    try {
      const started = Date.now();
      const work = slow.hash('slow');
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      await work;
      clearInterval(timer);
      const elapsed = Date.now() - started;
      assert.ok(ticks >= Math.floor(elapsed / 5) / 2, `the loop ticked ${ticks} times in ${elapsed} ms`);
    } finally {
      await slow.close();
    }
  });
});
