import type { Static, TSchema } from '@sinclair/typebox';
import { compileValidator } from '../validation.ts';
import type { AccountKind, AccountStatus, AdminRole } from './model.ts';
import { assertNewPasswordAcceptable } from './password-policy.ts';
import { CreateAdminBody, CreateUserBody } from './schemas.ts';

/**
 * What the account services are given, and the one check of it. The services check their
 * input themselves, whoever calls them (a route, a CLI command), with the schemas the routes
 * carry: a route's early 400 runs the same compiled check (validation.ts), and the password
 * rules that span fields (password-policy.ts) run only here.
 */

type ManagedStatus = Exclude<AccountStatus, 'deleted'>;

export interface NewAccount {
  identity: string;
  password: string;
  /** Checked when given; admin tools may leave it out. */
  passwordConfirm?: string;
  firstName?: string | null;
  lastName?: string | null;
  /** Defaults to active. */
  status?: ManagedStatus;
  /** Administrators only; defaults to [admin]. */
  roles?: AdminRole[];
}

export interface AccountUpdate {
  identity?: string;
  firstName?: string | null;
  lastName?: string | null;
  status?: ManagedStatus;
  roles?: AdminRole[];
  password?: string;
  passwordConfirm?: string;
}

export interface OwnProfileUpdate {
  firstName?: string | null;
  lastName?: string | null;
  currentPassword?: string;
  password?: string;
  passwordConfirm?: string;
}

/** `value` as `schema` accepts it, or ValidationFailed with an error per field. */
export function checkInput<S extends TSchema>(schema: S, value: unknown): Static<S> {
  return compileValidator<Static<S>>(schema).check(value);
}

const NEW_ACCOUNT_BODIES = { user: CreateUserBody, admin: CreateAdminBody } as const;

/** The new accounts checkNewAccount accepted, frozen, so that none is checked twice. */
const acceptedNewAccounts = new WeakSet<Readonly<NewAccount>>();

/**
 * A new account as the rules accept it: its fields by the schema of `POST /users` or
 * `POST /admins`, then the password rules. `admin:create` checks before it connects to
 * anything; the service then recognises what was accepted here and does not check it again.
 */
export function checkNewAccount(kind: AccountKind, input: NewAccount): Readonly<NewAccount> {
  if (acceptedNewAccounts.has(input)) return input;
  const fields: NewAccount = checkInput(NEW_ACCOUNT_BODIES[kind], input);
  assertNewPasswordAcceptable({ ...fields, confirmRequired: false });
  const accepted = Object.freeze({
    ...fields,
    ...(fields.roles === undefined ? {} : { roles: Object.freeze([...fields.roles]) as AdminRole[] }),
  });
  acceptedNewAccounts.add(accepted);
  return accepted;
}
