import type { Account } from './model.ts';

/** The public view of an account: everything but the password hash. */
export interface AccountView {
  id: string;
  identity: string;
  firstName: string | null;
  lastName: string | null;
  status: Account['status'];
  roles: Account['roles'];
  createdAt: string;
  updatedAt: string;
}

export function viewAccount(account: Account): AccountView {
  return {
    id: account.id,
    identity: account.identity,
    firstName: account.firstName,
    lastName: account.lastName,
    status: account.status,
    roles: account.roles,
    createdAt: account.createdAt.toISOString(),
    updatedAt: account.updatedAt.toISOString(),
  };
}
