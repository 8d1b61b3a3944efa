import { randomUUID } from 'node:crypto';
import type { Account, AccountStatus, AdminRole } from './model.ts';

/** Names are trimmed; an empty one is no name. */
export function cleanName(name: string | null | undefined): string | null | undefined {
  if (name === undefined || name === null) return name;
  return name.trim() || null;
}

/** A new account as it is first stored: the one place every field gets its first value. */
export function newAccountRecord(
  fields: {
    identity: string;
    passwordHash: string;
    firstName?: string | null | undefined;
    lastName?: string | null | undefined;
    status: AccountStatus;
    roles: readonly AdminRole[];
  },
  now: Date,
): Account {
  return {
    id: randomUUID(),
    identity: fields.identity,
    passwordHash: fields.passwordHash,
    firstName: cleanName(fields.firstName) ?? null,
    lastName: cleanName(fields.lastName) ?? null,
    status: fields.status,
    roles: [...fields.roles],
    sessionKey: '',
    hasAvatar: false,
    createdAt: now,
    updatedAt: now,
  };
}
