/**
 * The ClientStore and ScopeStore contract, run against the memory stores always and against
 * MongoDB (or FerretDB) when MONGODB_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { MemoryClientStore, MemoryScopeStore } from '../../src/stores/memory/index.ts';
import type { ClientStore, OAuthClient, ScopeStore } from '../../src/stores/types.ts';
import { mongoSkipped, openMongoTestDatabase } from '../support/mongo.ts';

interface Pair {
  clients: ClientStore;
  scopes: ScopeStore;
}

interface Harness extends Pair {
  reset(): Promise<void>;
  close(): Promise<void>;
  otherConnection?: () => Promise<Pair & { close(): Promise<void> }>;
}

function client(name: string, overrides: Partial<OAuthClient> = {}): OAuthClient {
  return {
    id: randomUUID(),
    name,
    secretDigest: 'a'.repeat(64),
    accountKind: 'user',
    createdAt: new Date(Date.UTC(2024, 0, 1, 12)),
    ...overrides,
  };
}

/** `separateConnections`: the backend is shared by processes, so races across connections are tested too. */
function catalogContract(open: () => Promise<Harness>, options: { separateConnections: boolean }): void {
  let h: Harness;
  before(async () => {
    h = await open();
  });
  beforeEach(async () => {
    await h.reset();
  });
  after(async () => {
    await h?.close();
  });

  test('a client is found by name exactly as created', async () => {
    const c = client('web', { accountKind: 'admin' });
    assert.equal(await h.clients.findByName('web'), null);
    assert.equal(await h.clients.createIfAbsent(c), true);
    const found = await h.clients.findByName('web');
    assert.deepEqual(found, c);
    assert.ok(found?.createdAt instanceof Date);
    assert.equal(await h.clients.findByName('WEB'), null);
  });

  test('client createIfAbsent never overwrites, even after the secret changed', async () => {
    const c = client('cli');
    assert.equal(await h.clients.createIfAbsent(c), true);
    assert.equal(await h.clients.updateSecret('cli', 'b'.repeat(64)), true);
    assert.equal(await h.clients.createIfAbsent(c), false);
    assert.equal(await h.clients.createIfAbsent(client('cli', { accountKind: 'admin' })), false);
    assert.deepEqual(await h.clients.findByName('cli'), { ...c, secretDigest: 'b'.repeat(64) });
  });

  test('updateSecret of an unknown client reports false', async () => {
    assert.equal(await h.clients.updateSecret('nobody', 'c'.repeat(64)), false);
    assert.equal(await h.clients.findByName('nobody'), null);
  });

  test('a scope is found by name and created once', async () => {
    assert.equal(await h.scopes.findByName('profile'), null);
    assert.equal(await h.scopes.createIfAbsent({ name: 'profile', description: 'Read your profile' }), true);
    assert.equal(await h.scopes.createIfAbsent({ name: 'profile', description: 'Changed' }), false);
    assert.deepEqual(await h.scopes.findByName('profile'), {
      name: 'profile',
      description: 'Read your profile',
    });
  });

  test('concurrent createIfAbsent creates a client and a scope exactly once', async () => {
    const clients = await Promise.all(
      Array.from({ length: 20 }, () => h.clients.createIfAbsent(client('race'))),
    );
    assert.equal(clients.filter(Boolean).length, 1);
    const scopes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => h.scopes.createIfAbsent({ name: 'race', description: `#${i}` })),
    );
    assert.equal(scopes.filter(Boolean).length, 1);
    assert.equal((await h.scopes.findByName('race'))?.description, `#${scopes.indexOf(true)}`);
  });

  if (!options.separateConnections) return;
  test('concurrent createIfAbsent from two connections creates each exactly once', async () => {
    assert.ok(h.otherConnection, 'the harness opens a second connection');
    const other = await h.otherConnection();
    try {
      const stores = [h, other];
      const clients = await Promise.all(
        Array.from({ length: 20 }, (_, i) => stores[i % 2]?.clients.createIfAbsent(client('shared'))),
      );
      assert.equal(clients.filter(Boolean).length, 1);
      const scopes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          stores[i % 2]?.scopes.createIfAbsent({ name: 'shared', description: `#${i}` }),
        ),
      );
      assert.equal(scopes.filter(Boolean).length, 1);
    } finally {
      await other.close();
    }
  });
}

describe('ClientStore/ScopeStore: memory', () => {
  catalogContract(
    async () => {
      const h: Harness = {
        clients: new MemoryClientStore(),
        scopes: new MemoryScopeStore(),
        async reset() {
          h.clients = new MemoryClientStore();
          h.scopes = new MemoryScopeStore();
        },
        async close() {},
      };
      return h;
    },
    { separateConnections: false },
  );
});

describe('ClientStore/ScopeStore: MongoDB', { skip: mongoSkipped }, () => {
  catalogContract(
    async () => {
      const database = await openMongoTestDatabase('catalog_test');
      return {
        ...database.stores,
        reset: () => database.empty('clients', 'scopes'),
        close: () => database.drop(),
        otherConnection: database.connectAgain,
      };
    },
    { separateConnections: true },
  );
});
