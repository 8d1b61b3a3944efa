import type { CatalogStores } from '../stores.ts';
import { MemoryAccountStore } from './accounts.ts';
import { MemoryAvatarStore } from './avatars.ts';
import { MemoryCachingNodeRegistry } from './caching-nodes.ts';
import { MemoryClientStore, MemoryScopeStore } from './catalog.ts';
import { MemoryLeaseStore } from './leases.ts';
import { MemoryOneTimeTokenStore } from './one-time-tokens.ts';
import { MemoryRefreshTokenStore } from './refresh-tokens.ts';
import { MemorySeedLedger } from './seed-ledger.ts';

export function memoryCatalogStores(): CatalogStores {
  return {
    admins: new MemoryAccountStore(),
    users: new MemoryAccountStore(),
    clients: new MemoryClientStore(),
    scopes: new MemoryScopeStore(),
    oneTimeTokens: new MemoryOneTimeTokenStore(),
    avatars: new MemoryAvatarStore(),
    seedLedger: new MemorySeedLedger(),
    cachingNodes: new MemoryCachingNodeRegistry(),
    leases: new MemoryLeaseStore(),
  };
}

export {
  MemoryAccountStore,
  MemoryCachingNodeRegistry,
  MemoryClientStore,
  MemoryLeaseStore,
  MemoryRefreshTokenStore,
  MemoryScopeStore,
  MemorySeedLedger,
};
