import type { AccountKind } from '../accounts/model.ts';
import type { ClientType, GrantType, OAuthClient } from './model.ts';

/** The public view of a client: everything but its id and the digest of its secret. */
export interface ClientView {
  name: string;
  type: ClientType;
  accounts: AccountKind;
  grants: GrantType[];
  redirectUris: string[];
  createdAt: string;
  updatedAt: string;
}

export function viewClient(client: OAuthClient): ClientView {
  return {
    name: client.name,
    type: client.type,
    accounts: client.accountKind,
    grants: client.grants,
    redirectUris: client.redirectUris,
    createdAt: client.createdAt.toISOString(),
    updatedAt: client.updatedAt.toISOString(),
  };
}
