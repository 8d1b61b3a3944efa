import type { Stores } from '../types.ts';
import { MemoryAccountStore } from './accounts.ts';
import { MemoryClientStore, MemoryScopeStore } from './catalog.ts';
import { MemoryRefreshTokenStore } from './refresh-tokens.ts';

export function memoryCatalogStores(): Pick<Stores, 'admins' | 'users' | 'clients' | 'scopes'> {
  return {
    admins: new MemoryAccountStore({ foldIdentityCase: false }),
    users: new MemoryAccountStore({ foldIdentityCase: true }),
    clients: new MemoryClientStore(),
    scopes: new MemoryScopeStore(),
  };
}

export { MemoryAccountStore, MemoryClientStore, MemoryRefreshTokenStore, MemoryScopeStore };
