/**
 * The SeedLedger contract, run against memory always and against MongoDB (or FerretDB) when
 * MONGODB_URL is set: a mark is claimed once, by one of any number of concurrent claimers
 * (separate connections standing for separate processes), and then stays.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SeedLedger } from '../../src/deployment-model.ts';
import { MemorySeedLedger } from '../../src/stores/memory/index.ts';
import { mongoCatalogStores } from '../../src/stores/mongo/index.ts';
import { SEED_LEDGER_COLLECTION } from '../../src/stores/mongo/seed-ledger.ts';
import { describeStoreContract, onConnections } from '../support/store-contract.ts';

describeStoreContract<{ ledger: SeedLedger }>(
  'SeedLedger',
  {
    memory: () => ({ ledger: new MemorySeedLedger() }),
    mongo: {
      database: 'seed_ledger',
      collections: [SEED_LEDGER_COLLECTION],
      stores: (db) => ({ ledger: mongoCatalogStores(db).seedLedger }),
    },
  },
  (h) => {
    test('a mark is claimed once and then stays', async () => {
      await onConnections(h, 2, async (connections) => {
        const { ledger } = h;
        assert.equal(await ledger.has('client:admin'), false);
        assert.equal(await ledger.claim('client:admin'), true);
        assert.equal(await ledger.has('client:admin'), true);
        assert.equal(await ledger.claim('client:admin'), false);
        for (const other of connections) assert.equal(await other.ledger.has('client:admin'), true);
        assert.equal(await ledger.has('client:frontend'), false);
      });
    });

    test('of concurrent claims of one mark, from every connection, exactly one succeeds', async () => {
      await onConnections(h, 2, async (connections) => {
        const claims = await Promise.all(
          Array.from({ length: 24 }, (_, i) =>
            connections[i % connections.length]?.ledger.claim('scope:api'),
          ),
        );
        assert.equal(claims.filter((claimed) => claimed === true).length, 1);
      });
    });
  },
);
