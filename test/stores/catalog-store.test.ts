/**
 * The ClientStore and ScopeStore contract, run against the memory stores always and against
 * MongoDB (or FerretDB) when MONGODB_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { ClientStore, OAuthClient, ScopeStore } from '../../src/oauth/model.ts';
import { MemoryClientStore, MemoryScopeStore } from '../../src/stores/memory/index.ts';
import { mongoCatalogStores } from '../../src/stores/mongo/index.ts';
import { type ContractHarness, describeStoreContract } from '../support/store-contract.ts';

interface Pair {
  clients: ClientStore;
  scopes: ScopeStore;
}

interface Harness extends Pair {
  /** Stores a client as it was written before clients had a type, redirect URIs and grants. */
  storeLegacyClient?: (name: string) => Promise<void>;
}

function client(name: string, overrides: Partial<OAuthClient> = {}): OAuthClient {
  return {
    id: randomUUID(),
    name,
    type: 'confidential',
    secretDigest: 'a'.repeat(64),
    previousSecretDigest: null,
    previousSecretExpiresAt: null,
    accountKind: 'user',
    redirectUris: [],
    grants: ['password', 'refresh_token'],
    createdAt: new Date(Date.UTC(2024, 0, 1, 12)),
    updatedAt: new Date(Date.UTC(2024, 0, 1, 12)),
    ...overrides,
  };
}

function catalogContract(h: ContractHarness<Harness>, options: { separateConnections: boolean }): void {
  test('a client is found by name exactly as created', async () => {
    const c = client('web', { accountKind: 'admin' });
    assert.equal(await h.clients.findByName('web'), null);
    assert.equal(await h.clients.createIfAbsent(c), true);
    const found = await h.clients.findByName('web');
    assert.deepEqual(found, c);
    assert.ok(found?.createdAt instanceof Date);
    assert.equal(await h.clients.findByName('WEB'), null);
  });

  test('a public client is stored without a secret, with its redirect URIs and grants', async () => {
    const c = client('spa', {
      type: 'public',
      secretDigest: null,
      redirectUris: ['https://app.example.test/callback', 'http://127.0.0.1/cb'],
      grants: ['authorization_code', 'refresh_token'],
    });
    assert.equal(await h.clients.createIfAbsent(c), true);
    assert.deepEqual(await h.clients.findByName('spa'), c);
  });

  test('client createIfAbsent never overwrites, even after the client changed', async () => {
    const c = client('cli');
    assert.equal(await h.clients.createIfAbsent(c), true);
    const later = new Date(Date.UTC(2024, 0, 2));
    const updated = await h.clients.update('cli', { secretDigest: 'b'.repeat(64), updatedAt: later });
    assert.deepEqual(updated, { ...c, secretDigest: 'b'.repeat(64), updatedAt: later });
    assert.equal(await h.clients.createIfAbsent(c), false);
    assert.equal(await h.clients.createIfAbsent(client('cli', { accountKind: 'admin' })), false);
    assert.deepEqual(await h.clients.findByName('cli'), updated);
  });

  test('update changes the redirect URIs and grants only, and of a known client only', async () => {
    const c = client('web');
    await h.clients.createIfAbsent(c);
    const changes = {
      redirectUris: ['https://web.example.test/cb'],
      grants: ['authorization_code' as const],
      // Not a changeable field: a store must not write it.
      name: 'renamed',
    };
    const updated = await h.clients.update('web', changes);
    assert.deepEqual(updated, { ...c, redirectUris: changes.redirectUris, grants: changes.grants });
    assert.deepEqual(await h.clients.findByName('web'), updated);
    assert.equal(await h.clients.findByName('renamed'), null);
    assert.equal(await h.clients.update('nobody', { grants: ['password'] }), null);
    assert.equal(await h.clients.findByName('nobody'), null);
  });

  test('a previous secret is stored with its expiry, and cleared with nulls', async () => {
    const expiresAt = new Date(Date.UTC(2024, 0, 2, 12));
    const c = client('rotated', { previousSecretDigest: 'b'.repeat(64), previousSecretExpiresAt: expiresAt });
    assert.equal(await h.clients.createIfAbsent(c), true);
    const found = await h.clients.findByName('rotated');
    assert.deepEqual(found, c);
    assert.ok(found?.previousSecretExpiresAt instanceof Date);

    const rotated = {
      secretDigest: 'c'.repeat(64),
      previousSecretDigest: 'a'.repeat(64),
      previousSecretExpiresAt: new Date(Date.UTC(2024, 0, 3)),
    };
    assert.deepEqual(await h.clients.update('rotated', rotated), { ...c, ...rotated });
    const retired = { previousSecretDigest: null, previousSecretExpiresAt: null };
    assert.deepEqual(await h.clients.update('rotated', retired), { ...c, ...rotated, ...retired });
    assert.deepEqual(await h.clients.findByName('rotated'), { ...c, ...rotated, ...retired });
  });

  test('list gives every client ordered by name; delete removes one', async () => {
    for (const name of ['web', 'Admin', 'cli', 'admin']) await h.clients.createIfAbsent(client(name));
    assert.deepEqual(
      (await h.clients.list()).map((c) => c.name),
      ['Admin', 'admin', 'cli', 'web'],
    );
    assert.equal(await h.clients.delete('cli'), true);
    assert.equal(await h.clients.delete('cli'), false);
    assert.equal(await h.clients.findByName('cli'), null);
    assert.deepEqual(
      (await h.clients.list()).map((c) => c.name),
      ['Admin', 'admin', 'web'],
    );
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
  test('a client stored before clients had a type reads as confidential, with the grants of that time', async () => {
    assert.ok(h.storeLegacyClient, 'the harness writes a legacy document');
    await h.storeLegacyClient('frontend');
    const found = await h.clients.findByName('frontend');
    assert.equal(found?.type, 'confidential');
    assert.deepEqual(found?.grants, ['password', 'refresh_token', 'client_credentials']);
    assert.deepEqual(found?.redirectUris, []);
    assert.deepEqual(found?.updatedAt, found?.createdAt);
    assert.equal(found?.previousSecretDigest, null);
    assert.equal(found?.previousSecretExpiresAt, null);
  });

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

describeStoreContract<Harness>(
  'ClientStore/ScopeStore',
  {
    memory: () => ({ clients: new MemoryClientStore(), scopes: new MemoryScopeStore() }),
    mongo: {
      database: 'catalog_test',
      collections: ['clients', 'scopes'],
      stores: (db) => ({
        ...mongoCatalogStores(db),
        async storeLegacyClient(name) {
          await db.collection('clients').insertOne({
            _id: randomUUID() as never,
            name,
            secretDigest: 'a'.repeat(64),
            accountKind: 'user',
            createdAt: new Date(),
          });
        },
      }),
    },
  },
  catalogContract,
);
