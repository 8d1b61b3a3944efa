import { ValidationFailed } from '../errors.ts';
import type { FieldErrors } from '../validation.ts';

/** `firstName` is `--first-name`: how most fields are given as options. */
export function kebabOption(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Runs a validation (a schema's, or a service's) and turns its per-field errors into one
 * line that names the options: `--identity: Must be ...; --last-name: ...`.
 */
export async function checked<T>(
  validate: () => T | Promise<T>,
  option: (field: string) => string = kebabOption,
): Promise<T> {
  try {
    return await validate();
  } catch (error) {
    if (!(error instanceof ValidationFailed)) throw error;
    const errors = error.extensions.errors as FieldErrors;
    throw new Error(
      Object.entries(errors)
        .map(([field, messages]) => `${option(field)}: ${messages.join('; ')}`)
        .join('; '),
    );
  }
}
