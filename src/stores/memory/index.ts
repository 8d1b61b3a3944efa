import type { Stores } from '../stores.ts';
import { MemoryAccountStore } from './accounts.ts';
import { MemoryClientStore, MemoryScopeStore } from './catalog.ts';
import { MemoryOneTimeTokenStore } from './one-time-tokens.ts';
import { MemoryRefreshTokenStore } from './refresh-tokens.ts';

export function memoryCatalogStores(): Pick<
  Stores,
  'admins' | 'users' | 'clients' | 'scopes' | 'oneTimeTokens'
> {
  return {
    admins: new MemoryAccountStore(),
    users: new MemoryAccountStore(),
    clients: new MemoryClientStore(),
    scopes: new MemoryScopeStore(),
    oneTimeTokens: new MemoryOneTimeTokenStore(),
  };
}

export { MemoryAccountStore, MemoryClientStore, MemoryRefreshTokenStore, MemoryScopeStore };
