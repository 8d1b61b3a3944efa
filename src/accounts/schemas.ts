import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';
import { Literals } from '../validation.ts';
import { ACCOUNT_STATUSES, type AccountStatus, ADMIN_ROLES } from './model.ts';

/**
 * The request bodies of the account routes, as TypeBox schemas. The route table carries these
 * same objects: the pipeline checks them early, the account services check their input with
 * them (input.ts), and the OpenAPI description shows them.
 * Rules that span fields (the confirmation equals the password, the password differs from the
 * identity) are in password-policy.ts. Bodies refuse unknown members, so a misspelt or
 * forbidden field (a user sending `status`) is a 400 rather than silently ignored.
 */

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;
export const IDENTITY_MAX_LENGTH = 320;
export const NAME_MAX_LENGTH = 100;

/** A user's identity is their e-mail address. */
export const EmailIdentity = Type.String({
  format: 'email',
  maxLength: IDENTITY_MAX_LENGTH,
  description: 'E-mail address',
  errorMessage: `Must be an e-mail address of at most ${IDENTITY_MAX_LENGTH} characters`,
});

/** An administrator's identity is a name: letters, digits and `. _ @ + -`. */
export const AdminIdentity = Type.String({
  minLength: 1,
  maxLength: IDENTITY_MAX_LENGTH,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._@+-]*$',
  description: 'Administrator name',
  errorMessage: `Must be 1 to ${IDENTITY_MAX_LENGTH} letters, digits or . _ @ + - characters, starting with a letter or digit`,
});

export const NewPassword = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  errorMessage: `Must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`,
});

export const PasswordConfirm = Type.String({
  maxLength: PASSWORD_MAX_LENGTH,
  description: 'The new password again',
  errorMessage: 'Must repeat the password',
});

export const CurrentPassword = Type.String({
  minLength: 1,
  maxLength: PASSWORD_MAX_LENGTH,
  errorMessage: 'Must be the current password',
});

/** First or last name: optional, at most 100 characters without control characters; null clears it. */
export const PersonName = Type.Union(
  [Type.String({ maxLength: NAME_MAX_LENGTH, pattern: '^[^\\u0000-\\u001f\\u007f]*$' }), Type.Null()],
  { errorMessage: `Must be text of at most ${NAME_MAX_LENGTH} characters without line breaks, or null` },
);

/** The statuses an administrator sets: `deleted` is only ever reached by deletion. */
const MANAGED_STATUSES = ACCOUNT_STATUSES.filter(
  (status): status is Exclude<AccountStatus, 'deleted'> => status !== 'deleted',
);
/** An administrator account is never pending: nobody registers one. */
const ADMIN_STATUSES = MANAGED_STATUSES.filter(
  (status): status is Exclude<AccountStatus, 'deleted' | 'pending'> => status !== 'pending',
);

export const ManagedStatus = Literals(MANAGED_STATUSES);

export const AdminStatus = Literals(ADMIN_STATUSES);

export const AdminRoles = Type.Array(Literals(ADMIN_ROLES), {
  minItems: 1,
  uniqueItems: true,
  errorMessage: `Must be a non-empty list of distinct roles: ${ADMIN_ROLES.join(', ')}`,
});

function body<T extends TProperties>(properties: T, description: string): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, description });
}

const names = { firstName: Type.Optional(PersonName), lastName: Type.Optional(PersonName) };
const passwordChange = {
  currentPassword: Type.Optional(CurrentPassword),
  password: Type.Optional(NewPassword),
  passwordConfirm: Type.Optional(PasswordConfirm),
};

export const RegisterBody = body(
  { identity: EmailIdentity, password: NewPassword, passwordConfirm: PasswordConfirm, ...names },
  'A new user account; its identity is the e-mail address the activation link is sent to',
);

export const EmailBody = body({ email: EmailIdentity }, 'The e-mail address of a user account');

export const ActivationBody = body(
  {
    password: Type.String({
      minLength: 1,
      maxLength: PASSWORD_MAX_LENGTH,
      errorMessage: 'Must be the password chosen at registration',
    }),
  },
  'The password chosen at registration: the link proves the mailbox, the password the registrant',
);

export const PasswordResetBody = body(
  { password: NewPassword, passwordConfirm: PasswordConfirm },
  'The new password, twice',
);

export const OwnProfileBody = body(
  { ...names, ...passwordChange },
  'Names to change; to change the password also currentPassword, password and passwordConfirm',
);

export const CurrentPasswordBody = body(
  { currentPassword: CurrentPassword },
  "The account's current password: a stolen access token alone must not be enough",
);

export const IdentityChangeBody = body(
  { identity: EmailIdentity, currentPassword: CurrentPassword },
  'The new e-mail address, which the confirmation link is sent to, and the current password',
);

export const CreateUserBody = body(
  {
    identity: EmailIdentity,
    password: NewPassword,
    passwordConfirm: Type.Optional(PasswordConfirm),
    ...names,
    status: Type.Optional(ManagedStatus),
  },
  'A new user account (status defaults to active)',
);

export const UpdateUserBody = body(
  {
    identity: Type.Optional(EmailIdentity),
    ...names,
    status: Type.Optional(ManagedStatus),
    password: Type.Optional(NewPassword),
    passwordConfirm: Type.Optional(PasswordConfirm),
  },
  'The fields to change',
);

export const CreateAdminBody = body(
  {
    identity: AdminIdentity,
    password: NewPassword,
    passwordConfirm: Type.Optional(PasswordConfirm),
    ...names,
    roles: Type.Optional(AdminRoles),
    status: Type.Optional(AdminStatus),
  },
  'A new administrator (roles default to [admin], status to active)',
);

export const UpdateAdminBody = body(
  {
    identity: Type.Optional(AdminIdentity),
    ...names,
    roles: Type.Optional(AdminRoles),
    status: Type.Optional(AdminStatus),
    password: Type.Optional(NewPassword),
    passwordConfirm: Type.Optional(PasswordConfirm),
  },
  'The fields to change; all but the names only by a superuser',
);

export type RegisterInput = Static<typeof RegisterBody>;
