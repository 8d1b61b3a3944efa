import { ValidationFailed } from '../errors.ts';
import type { Account } from './model.ts';
import type { PasswordHasher } from './password-hasher.ts';

/**
 * The password rules that span fields, which a per-field schema cannot express: the
 * confirmation must equal the password, and the password must not be the identity. Lengths
 * are checked by the schemas before this runs. Throws ValidationFailed with per-field errors.
 */
export function assertNewPasswordAcceptable(input: {
  password: string;
  passwordConfirm?: string | undefined;
  identity: string;
  /** Self-service forms require the confirmation; admin tools may leave it out. */
  confirmRequired: boolean;
}): void {
  const errors: Record<string, string[]> = {};
  if (input.passwordConfirm === undefined) {
    if (input.confirmRequired) errors.passwordConfirm = ['Must repeat the password'];
  } else if (input.passwordConfirm !== input.password) {
    errors.passwordConfirm = ['Does not match the password'];
  }
  if (input.password.trim().toLowerCase() === input.identity.trim().toLowerCase()) {
    errors.password = ['Must not be the same as the identity'];
  }
  if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);
}

/**
 * The account holder's proof for a change a stolen access token must not be enough for (a new
 * password, address, or the deletion): a wrong current password is a 400 naming the field.
 */
export async function assertCurrentPassword(
  passwords: Pick<PasswordHasher, 'verify'>,
  account: Pick<Account, 'passwordHash'>,
  currentPassword: string,
): Promise<void> {
  if (!(await passwords.verify(currentPassword, account.passwordHash)))
    throw new ValidationFailed({ currentPassword: ['Is not the current password'] });
}
