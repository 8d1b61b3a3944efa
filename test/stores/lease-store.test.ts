/**
 * The LeaseStore contract, run against memory always and against MongoDB (or FerretDB) when
 * MONGODB_URL is set, with several connections standing for several processes: one holder at
 * a time, freed by giving it back or by running out, and never by a former holder.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease, LeaseStore } from '../../src/deployment-model.ts';
import { MemoryLeaseStore } from '../../src/stores/memory/index.ts';
import { mongoCatalogStores } from '../../src/stores/mongo/index.ts';
import { LEASES_COLLECTION } from '../../src/stores/mongo/leases.ts';
import { describeStoreContract, onConnections } from '../support/store-contract.ts';

const inAMinute = () => new Date(Date.now() + 60_000);

describeStoreContract<{ leases: LeaseStore }>(
  'LeaseStore',
  {
    memory: () => ({ leases: new MemoryLeaseStore() }),
    mongo: {
      database: 'leases',
      collections: [LEASES_COLLECTION],
      stores: (db) => ({ leases: mongoCatalogStores(db).leases }),
    },
  },
  (h) => {
    /** The lease store through this connection, and through another where the backend has more. */
    const twoProcesses = (use: (leases: LeaseStore, other: LeaseStore) => Promise<void>) =>
      onConnections(h, 1, (connections) => use(h.leases, (connections.at(-1) ?? h).leases));

    test('a lease has one holder until it is given back; then the next taker gets it', async () => {
      await twoProcesses(async (leases, other) => {
        const first = await leases.acquire('rule', inAMinute());
        assert.ok(first);
        assert.equal(first.name, 'rule');
        assert.equal(await other.acquire('rule', inAMinute()), null);
        assert.equal(await leases.acquire('rule', inAMinute()), null, 'not even the same process twice');
        assert.ok(await other.acquire('another rule', inAMinute()), 'another lease is free');
        await leases.release(first);
        const second = await other.acquire('rule', inAMinute());
        assert.ok(second);
        assert.notEqual(second.generation, first.generation);
      });
    });

    test('a lease that ran out is taken over, and its former holder cannot give the new one back', async () => {
      await twoProcesses(async (leases, other) => {
        const lapsed = await leases.acquire('rule', new Date(Date.now() - 1));
        assert.ok(lapsed);
        const taken = await other.acquire('rule', inAMinute());
        assert.ok(taken, 'a holder that died frees its lease by running out');
        await leases.release(lapsed);
        assert.equal(await leases.acquire('rule', inAMinute()), null, 'the new holder still holds it');
        await other.release(taken);
        assert.ok(await leases.acquire('rule', inAMinute()));
      });
    });

    test('of many takers at once, from every connection, exactly one gets the lease, every round', async () => {
      await onConnections(h, 2, async (connections) => {
        for (let round = 0; round < 5; round++) {
          const taken = await Promise.all(
            Array.from({ length: 16 }, (_, i) =>
              connections[i % connections.length]?.leases.acquire('rule', inAMinute()),
            ),
          );
          const holders = taken.filter((lease): lease is Lease => lease !== null && lease !== undefined);
          assert.equal(holders.length, 1, `round ${round}`);
          await h.leases.release(holders[0] as Lease);
        }
      });
    });
  },
);
