import { randomUUID } from 'node:crypto';
import type { GrantType, OAuthClient } from './model.ts';

/**
 * A new client as it is first stored: the one place every field gets its first value. Its id
 * is new, so tokens of an earlier client of the same name are never taken for its own.
 */
export function newClientRecord(
  fields: Pick<OAuthClient, 'name' | 'type' | 'secretDigest' | 'accountKind'> & {
    redirectUris: readonly string[];
    grants: readonly GrantType[];
  },
  now: Date,
): OAuthClient {
  return {
    id: randomUUID(),
    name: fields.name,
    type: fields.type,
    secretDigest: fields.secretDigest,
    previousSecretDigest: null,
    previousSecretExpiresAt: null,
    accountKind: fields.accountKind,
    redirectUris: [...fields.redirectUris],
    grants: [...fields.grants],
    createdAt: now,
    updatedAt: now,
  };
}
