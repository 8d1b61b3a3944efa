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
    // Judged by CPU time, not by ticks of a timer: on a loaded machine a timer ticks late
    // whoever hashes, but the hash's CPU time lands on its own thread either way.
    const slow = createPasswordHasher({ cost: 10, threads: 1 });
    try {
      const process0 = process.cpuUsage();
      const thread0 = process.threadCpuUsage();
      await slow.hash('slow');
      const all = process.cpuUsage(process0);
      const loop = process.threadCpuUsage(thread0);
      const ms = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;
      assert.ok(
        ms(loop) < ms(all) / 4,
        `the event loop's thread spent ${ms(loop)} ms of the ${ms(all)} ms the hash cost the process`,
      );
    } finally {
      await slow.close();
    }
  });
});
