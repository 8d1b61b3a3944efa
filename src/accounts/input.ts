import type { Static, TSchema } from '@sinclair/typebox';
import { compileValidator } from '../validation.ts';
import type { AccountKind, AdminRole } from './model.ts';
import { assertNewPasswordAcceptable } from './password-policy.ts';
import {
  CreateAdminBody,
  CreateUserBody,
  type OwnProfileBody,
  type UpdateAdminBody,
  type UpdateUserBody,
} from './schemas.ts';

/**
 * What the account services are given, and the one check of it. The services check their
 * input themselves, whoever calls them (a route, a CLI command), with the schemas the routes
 * carry: a route's early 400 runs the same compiled check (validation.ts), and the password
 * rules that span fields (password-policy.ts) run only here.
 */

/**
 * A new account: the fields of `POST /users`, with the roles `POST /admins` also takes (an
 * administrator's status is one of the user's).
 */
export type NewAccount = Static<typeof CreateUserBody> & Pick<Static<typeof CreateAdminBody>, 'roles'>;

/** The fields to change: those of `PATCH /users/{id}`, with the roles `PATCH /admins/{id}` also takes. */
export type AccountUpdate = Static<typeof UpdateUserBody> & Pick<Static<typeof UpdateAdminBody>, 'roles'>;

/** The owner's changes to their own profile: `PATCH /users/my-account`. */
export type OwnProfileUpdate = Static<typeof OwnProfileBody>;

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
