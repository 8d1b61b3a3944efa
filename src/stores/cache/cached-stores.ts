/**
 * The catalog stores (accounts, clients, scopes) behind per-worker caches: reads on the hot
 * paths come from memory, every write publishes what it changed once it committed.
 */
import type { AccountStore } from '../../accounts/model.ts';
import type { ClientStore, ScopeStore } from '../../oauth/model.ts';
import type { Stores } from '../stores.ts';
import type { Invalidations } from './invalidation.ts';
import { type CacheBounds, ReadThrough } from './read-through.ts';

type Found<T> = NonNullable<Awaited<T>>;

/**
 * Classes that delegate each method by name rather than proxies: a test that replaces one
 * method of a store to inject a fault replaces it on this object, as on any other store.
 */
class CachedAccountStore implements AccountStore {
  readonly #store: AccountStore;
  readonly #byId: ReadThrough<Found<ReturnType<AccountStore['findById']>>>;

  constructor(store: AccountStore, invalidations: Invalidations, topic: string, bounds: CacheBounds) {
    this.#store = store;
    this.#byId = new ReadThrough(invalidations, topic, bounds);
  }

  findById(id: string) {
    return this.#byId.get(id, () => this.#store.findById(id));
  }
  findByIdentity(identity: string) {
    return this.#store.findByIdentity(identity);
  }
  create(account: Parameters<AccountStore['create']>[0]) {
    return this.#store.create(account);
  }
  createIfAbsent(account: Parameters<AccountStore['createIfAbsent']>[0]) {
    return this.#store.createIfAbsent(account);
  }
  update(id: string, changes: Parameters<AccountStore['update']>[1]) {
    return this.#byId.write(id, () => this.#store.update(id, changes));
  }
  writeAvatarFlag(...args: Parameters<AccountStore['writeAvatarFlag']>) {
    return this.#byId.write(args[0], () => this.#store.writeAvatarFlag(...args));
  }
  delete(id: string) {
    return this.#byId.write(id, () => this.#store.delete(id));
  }
  list(query: Parameters<AccountStore['list']>[0]) {
    return this.#store.list(query);
  }
  count(filter: Parameters<AccountStore['count']>[0]) {
    return this.#store.count(filter);
  }
}

class CachedClientStore implements ClientStore {
  readonly #store: ClientStore;
  readonly #byName: ReadThrough<Found<ReturnType<ClientStore['findByName']>>>;

  constructor(store: ClientStore, invalidations: Invalidations, bounds: CacheBounds) {
    this.#store = store;
    this.#byName = new ReadThrough(invalidations, 'client', bounds);
  }

  findByName(name: string) {
    return this.#byName.get(name, () => this.#store.findByName(name));
  }
  list() {
    return this.#store.list();
  }
  createIfAbsent(client: Parameters<ClientStore['createIfAbsent']>[0]) {
    return this.#store.createIfAbsent(client);
  }
  update(name: string, changes: Parameters<ClientStore['update']>[1]) {
    return this.#byName.write(name, () => this.#store.update(name, changes));
  }
  delete(name: string) {
    return this.#byName.write(name, () => this.#store.delete(name));
  }
}

/** Scopes are only ever added, and a missing one is never cached: nothing to invalidate. */
class CachedScopeStore implements ScopeStore {
  readonly #store: ScopeStore;
  readonly #byName: ReadThrough<Found<ReturnType<ScopeStore['findByName']>>>;

  constructor(store: ScopeStore, invalidations: Invalidations, bounds: CacheBounds) {
    this.#store = store;
    this.#byName = new ReadThrough(invalidations, 'scope', bounds);
  }

  findByName(name: string) {
    return this.#byName.get(name, () => this.#store.findByName(name));
  }
  createIfAbsent(scope: Parameters<ScopeStore['createIfAbsent']>[0]) {
    return this.#store.createIfAbsent(scope);
  }
}

export function cachedAccounts(
  store: AccountStore,
  invalidations: Invalidations,
  topic: string,
  bounds: CacheBounds,
): AccountStore {
  return new CachedAccountStore(store, invalidations, topic, bounds);
}

export function cachedClients(
  store: ClientStore,
  invalidations: Invalidations,
  bounds: CacheBounds,
): ClientStore {
  return new CachedClientStore(store, invalidations, bounds);
}

/** A short TTL: the safety net for a write whose message was lost while the channel looked live. */
const CACHE_TTL_MS = 30_000;
/** Clients and scopes are few, registered by hand. */
const CATALOG_CACHE_SIZE = 1000;

/** The account, client and scope stores of a set behind caches; the other stores as they were. */
export function cacheCatalog<T extends Pick<Stores, 'admins' | 'users' | 'clients' | 'scopes'>>(
  stores: T,
  invalidations: Invalidations,
  accountCacheSize: number,
): T {
  const accounts = { size: accountCacheSize, ttlMs: CACHE_TTL_MS };
  const catalog = { size: CATALOG_CACHE_SIZE, ttlMs: CACHE_TTL_MS };
  return {
    ...stores,
    admins: cachedAccounts(stores.admins, invalidations, 'admin', accounts),
    users: cachedAccounts(stores.users, invalidations, 'user', accounts),
    clients: cachedClients(stores.clients, invalidations, catalog),
    scopes: new CachedScopeStore(stores.scopes, invalidations, catalog),
  };
}
