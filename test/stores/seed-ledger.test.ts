/**
 * The SeedLedger contract, run against memory always and against MongoDB (or FerretDB) when
 * MONGODB_URL is set: a mark is claimed once, by one of any number of concurrent claimers
 * (separate connections standing for separate processes), and stays until it is released.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MemorySeedLedger } from '../../src/stores/memory/index.ts';
import type { SeedLedger } from '../../src/stores/types.ts';
import { mongoSkipped, type SharedStore, sharedMongoStore } from '../support/mongo.ts';

/** Ledgers over one backend: more than one when the backend is shared by processes. */
type Harness = SharedStore<SeedLedger>;

function seedLedgerContract(open: () => Promise<Harness>): void {
  let h: Harness;
  let ledger: SeedLedger;
  before(async () => {
    h = await open();
    ledger = h.connections[0] as SeedLedger;
  });
  after(() => h?.close());

  test('a mark is claimed once and then stays', async () => {
    assert.equal(await ledger.has('client:admin'), false);
    assert.equal(await ledger.claim('client:admin'), true);
    assert.equal(await ledger.has('client:admin'), true);
    assert.equal(await ledger.claim('client:admin'), false);
    for (const other of h.connections) assert.equal(await other.has('client:admin'), true);
    assert.equal(await ledger.has('client:frontend'), false);
  });

  test('of concurrent claims of one mark, from every connection, exactly one succeeds', async () => {
    const claims = await Promise.all(
      Array.from({ length: 24 }, (_, i) => h.connections[i % h.connections.length]?.claim('scope:api')),
    );
    assert.equal(claims.filter((claimed) => claimed === true).length, 1);
  });

  test('a released mark can be claimed again, once', async () => {
    assert.equal(await ledger.claim('user:user@example.com'), true);
    await ledger.release('user:user@example.com');
    assert.equal(await ledger.has('user:user@example.com'), false);
    const claims = await Promise.all(h.connections.map((other) => other.claim('user:user@example.com')));
    assert.equal(claims.filter(Boolean).length, 1);
    await ledger.release('never-claimed');
  });
}

describe('SeedLedger: memory', () => {
  seedLedgerContract(async () => ({ connections: [new MemorySeedLedger()], close: async () => {} }));
});

describe('SeedLedger: MongoDB', { skip: mongoSkipped }, () => {
  seedLedgerContract(() => sharedMongoStore('seed_ledger_test', (stores) => stores.seedLedger));
});
