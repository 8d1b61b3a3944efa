import type { AccountStore, OneTimeTokenStore } from '../accounts/model.ts';
import type { ClientStore, CodeFlowStore, RefreshTokenStore, ScopeStore } from '../oauth/model.ts';

/**
 * One store of each kind, whichever backend holds it: what `openStores` returns and the
 * composition root hands out. The store interfaces are the domains' own (accounts/model.ts,
 * oauth/model.ts); src/stores/ implements them.
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
  /** Closes connections; safe to call once at shutdown. */
  close(): Promise<void>;
}
