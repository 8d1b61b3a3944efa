import type { AvatarStore } from '../accounts/avatar-store.ts';
import type { AccountStore, OneTimeTokenStore } from '../accounts/model.ts';
import type { CachingNodeRegistry, LeaseStore, SeedLedger } from '../deployment-model.ts';
import type { ClientStore, CodeFlowStore, RefreshTokenStore, ScopeStore } from '../oauth/model.ts';

/**
 * One store of each kind, whichever backend holds it: what `openStores` returns and the
 * composition root hands out. The store interfaces are the domains' own (accounts/model.ts,
 * oauth/model.ts), and those of the records about the deployment (deployment-model.ts);
 * src/stores/ implements them.
 */
export interface Stores {
  admins: AccountStore;
  users: AccountStore;
  clients: ClientStore;
  scopes: ScopeStore;
  refreshTokens: RefreshTokenStore;
  codeFlow: CodeFlowStore;
  /** Activation and password-reset links; they live beside the accounts. */
  oneTimeTokens: OneTimeTokenStore;
  /** Users' avatars, beside the accounts, where every node reads them. */
  avatars: AvatarStore;
  /** Which seed records were seeded; beside the records they mark. */
  seedLedger: SeedLedger;
  /** Whether processes cache the records above; beside them, where every writer looks. */
  cachingNodes: CachingNodeRegistry;
  /** The leases of the rules that count accounts and clients; beside what they count. */
  leases: LeaseStore;
  /** Closes connections; safe to call once at shutdown. */
  close(): Promise<void>;
}

/** The stores MongoDB holds when it is configured, and memory otherwise: all but Redis's. */
export type CatalogStores = Omit<Stores, 'refreshTokens' | 'codeFlow' | 'close'>;
