import type { AccountKind } from '../accounts/model.ts';
import { previousSecretExpiry } from './client-secrets.ts';
import type { ClientType, GrantType, OAuthClient } from './model.ts';

/**
 * The public view of a client: everything but its id and the digests of its secrets. Of the
 * secret before a rotation it says only until when it is still accepted (null: it is not).
 */
export interface ClientView {
  name: string;
  type: ClientType;
  accounts: AccountKind;
  grants: GrantType[];
  redirectUris: string[];
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export function viewClient(client: OAuthClient, now = new Date()): ClientView {
  return {
    name: client.name,
    type: client.type,
    accounts: client.accountKind,
    grants: client.grants,
    redirectUris: client.redirectUris,
    previousSecretExpiresAt: previousSecretExpiry(client, now)?.toISOString() ?? null,
    createdAt: client.createdAt.toISOString(),
    updatedAt: client.updatedAt.toISOString(),
  };
}
