import { randomUUID } from 'node:crypto';
import type { Account } from '../../src/accounts/model.ts';

/** An active account record without roles, as a store holds it, with `overrides` applied. */
export function accountRecord(overrides: Partial<Account> = {}, at = new Date()): Account {
  return {
    id: randomUUID(),
    identity: `${randomUUID()}@example.com`,
    passwordHash: 'x',
    firstName: null,
    lastName: null,
    status: 'active',
    roles: [],
    sessionKey: '',
    hasAvatar: false,
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}
