import {
  FormatRegistry,
  Kind,
  type SchemaOptions,
  type TLiteral,
  type TSchema,
  type TUnion,
  type TUnsafe,
  Type,
  TypeRegistry,
} from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { ValidationFailed } from './errors.ts';
import { isUuid } from './ids.ts';

/**
 * The schema compiler every layer validates with: request bodies and queries in the HTTP
 * pipeline, token request parameters in the grants, command options in the CLI. It knows the
 * service's formats (`email`, `uuid`) and the QueryInteger and StringEnum kinds.
 */

// A pragmatic address check (the WHATWG one browsers use for <input type=email>).
const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;
FormatRegistry.Set('email', (value) => EMAIL.test(value));

FormatRegistry.Set('uuid', isUuid);

TypeRegistry.Set<{ minimum: number; maximum: number }>(
  'QueryInteger',
  (schema, value) =>
    typeof value === 'string' &&
    /^(0|[1-9][0-9]{0,14})$/.test(value) &&
    Number(value) >= schema.minimum &&
    Number(value) <= schema.maximum,
);

/**
 * A whole number in a query parameter. Query values are strings, so the check reads the
 * decimal digits (no sign, no leading zero, no exponent) and the range; the JSON Schema the
 * OpenAPI description shows is the integer the parameter stands for.
 */
export function QueryInteger(options: {
  minimum: number;
  maximum: number;
  description: string;
  errorMessage: string;
}): TUnsafe<number> {
  return Type.Unsafe<number>({ [Kind]: 'QueryInteger', type: 'integer', ...options });
}

TypeRegistry.Set<{ enum: readonly string[] }>(
  'StringEnum',
  (schema, value) => typeof value === 'string' && schema.enum.includes(value),
);

/**
 * One of a list of strings, described as a JSON Schema `enum` (which code generators turn
 * into an enumeration): the values of a query parameter.
 */
export function StringEnum<T extends string>(
  values: readonly T[],
  options: { description: string; errorMessage: string },
): TUnsafe<T> {
  return Type.Unsafe<T>({ [Kind]: 'StringEnum', type: 'string', enum: [...values], ...options });
}

/** One of a list of strings, built from the list, so the values are named in one place. */
export function Literals<T extends string>(
  values: readonly T[],
  options?: SchemaOptions,
): TUnion<TLiteral<T>[]> {
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  );
}

export type FieldErrors = Record<string, string[]>;

/** `check` returns the value typed, or throws (by default ValidationFailed). */
export interface Validator<T> {
  check(value: unknown): T;
  errors(value: unknown): FieldErrors | null;
}

/**
 * Each schema object is compiled once, by whichever layer asks first: the pipeline's early
 * check of a body and the check of the service it reaches run the same code.
 */
const compiledChecks = new WeakMap<TSchema, TypeCheck<TSchema>>();

function compiledCheck(schema: TSchema): TypeCheck<TSchema> {
  let compiled = compiledChecks.get(schema);
  if (!compiled) {
    compiled = TypeCompiler.Compile(schema);
    compiledChecks.set(schema, compiled);
  }
  return compiled;
}

export function compileValidator<T>(
  schema: TSchema,
  fail = (errors: FieldErrors): Error => new ValidationFailed(errors),
): Validator<T> {
  const compiled = compiledCheck(schema);
  function errors(value: unknown): FieldErrors | null {
    if (compiled.Check(value)) return null;
    // A Map, not an object: field names come from the client (`constructor`, `__proto__`).
    const result = new Map<string, string[]>();
    for (const error of compiled.Errors(value)) {
      const field = error.path.replace(/^\//, '').replaceAll('/', '.') || 'body';
      const messages = result.get(field) ?? [];
      const message = messageFor(error.schema, error.message);
      if (!messages.includes(message)) messages.push(message);
      result.set(field, messages);
    }
    return Object.fromEntries(result);
  }
  return {
    errors,
    check(value) {
      const found = errors(value);
      if (found) throw fail(found);
      return value as T;
    },
  };
}

/**
 * A schema may name its own message (`errorMessage`), which reads better than the generic one.
 * Without one, a value outside a set of literals (`Literals`, `Type.Literal`) is told the
 * values allowed, where TypeBox says only "Expected union value".
 */
function messageFor(schema: TSchema, fallback: string): string {
  const custom = (schema as { errorMessage?: unknown }).errorMessage;
  if (typeof custom === 'string') return custom;
  const allowed = literalValues(schema);
  if (allowed === null) return fallback;
  if (allowed.length <= 2) return `Must be ${allowed.join(' or ')}`;
  return `Must be one of ${allowed.join(', ')}`;
}

/** The values of a literal, or of a union of nothing but literals; null for any other schema. */
function literalValues(schema: TSchema): string[] | null {
  const literal = (member: TSchema) => ('const' in member ? String(member.const) : null);
  const members: TSchema[] = Array.isArray(schema.anyOf) ? schema.anyOf : [schema];
  const values = members.map(literal);
  return values.every((value): value is string => value !== null) ? values : null;
}
