/**
 * The LeaseStore contract, run against memory always and against MongoDB (or FerretDB) when
 * MONGODB_URL is set, with several connections standing for several processes: one holder at
 * a time, freed by giving it back or by running out, and never by a former holder.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MemoryLeaseStore } from '../../src/stores/memory/index.ts';
import type { LeaseStore } from '../../src/stores/types.ts';
import { mongoSkipped, type SharedStore, sharedMongoStore } from '../support/mongo.ts';

/** Lease stores over one backend: more than one when the backend is shared by processes. */
type Harness = SharedStore<LeaseStore>;

const inAMinute = () => new Date(Date.now() + 60_000);

function leaseContract(open: () => Promise<Harness>): void {
  let h: Harness;
  let leases: LeaseStore;
  let other: LeaseStore;
  let counter = 0;
  const unique = () => `rule-${Date.now()}-${++counter}`;
  before(async () => {
    h = await open();
    leases = h.connections[0] as LeaseStore;
    other = h.connections.at(-1) as LeaseStore;
  });
  after(() => h?.close());

  test('a lease has one holder until it is given back; then the next taker gets it', async () => {
    const name = unique();
    const first = await leases.acquire(name, inAMinute());
    assert.ok(first);
    assert.equal(first.name, name);
    assert.equal(await other.acquire(name, inAMinute()), null);
    assert.equal(await leases.acquire(name, inAMinute()), null, 'not even the same process twice');
    assert.ok(await other.acquire(unique(), inAMinute()), 'another lease is free');
    await leases.release(first);
    const second = await other.acquire(name, inAMinute());
    assert.ok(second);
    assert.notEqual(second.generation, first.generation);
  });

  test('a lease that ran out is taken over, and its former holder cannot give the new one back', async () => {
    const name = unique();
    const lapsed = await leases.acquire(name, new Date(Date.now() - 1));
    assert.ok(lapsed);
    const taken = await other.acquire(name, inAMinute());
    assert.ok(taken, 'a holder that died frees its lease by running out');
    await leases.release(lapsed);
    assert.equal(await leases.acquire(name, inAMinute()), null, 'the new holder still holds it');
    await other.release(taken);
    assert.ok(await leases.acquire(name, inAMinute()));
  });

  test('of many takers at once, from every connection, exactly one gets the lease, every round', async () => {
    const name = unique();
    for (let round = 0; round < 5; round++) {
      const taken = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          h.connections[i % h.connections.length]?.acquire(name, inAMinute()),
        ),
      );
      const holders = taken.filter((lease) => lease !== null && lease !== undefined);
      assert.equal(holders.length, 1, `round ${round}`);
      await leases.release(holders[0] as NonNullable<(typeof holders)[number]>);
    }
  });
}

describe('LeaseStore: memory', () => {
  leaseContract(async () => ({ connections: [new MemoryLeaseStore()], close: async () => {} }));
});

describe('LeaseStore: MongoDB', { skip: mongoSkipped }, () => {
  leaseContract(() => sharedMongoStore('lease_test', (stores) => stores.leases));
});
