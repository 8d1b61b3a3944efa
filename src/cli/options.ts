import { InvalidArgumentError } from 'commander';

/** Parses an option given in whole seconds. */
export function seconds(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError('must be a whole number of seconds (1 or more)');
  return Number(value);
}
