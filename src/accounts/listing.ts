import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { BadRequest } from '../errors.ts';
import { compileValidator, QueryInteger, StringEnum, type Validator } from '../validation.ts';
import {
  ACCOUNT_SORT_FIELDS,
  ACCOUNT_STATUSES,
  type AccountKind,
  type AccountQuery,
  type AccountSortField,
  type AccountStatus,
  ADMIN_ROLES,
  type AdminRole,
} from './model.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
/** Far beyond any page a listing has; it bounds the number the stores are asked to skip to. */
const MAX_PAGE = 999_999;
/** As long as the longest identity, so that a whole one can be searched for. */
export const SEARCH_MAX_LENGTH = 320;
const DEFAULT_SORT = 'createdAt';

/** Each sort field, ascending, and with a leading `-`, descending. */
export const ACCOUNT_SORTS = ACCOUNT_SORT_FIELDS.flatMap((field) => [field, `-${field}`] as const);

/**
 * The query of the account collections (administrators can also be filtered by role).
 * Unknown and repeated parameters fail, rather than being guessed at.
 */
export function accountListQuery(kind: AccountKind): TObject {
  return LIST_QUERIES[kind].schema;
}

function listQuerySchema(kind: AccountKind): TObject {
  const parameters: Record<string, TSchema> = {
    page: QueryInteger({
      minimum: 1,
      maximum: MAX_PAGE,
      description: 'Page number, from 1 (default 1)',
      errorMessage: 'Must be a whole number from 1',
    }),
    limit: QueryInteger({
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      description: `Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
      errorMessage: `Must be a whole number from 1 to ${MAX_PAGE_SIZE}`,
    }),
    search: Type.String({
      maxLength: SEARCH_MAX_LENGTH,
      pattern: '^[^\\u0000-\\u001f\\u007f]*$',
      description:
        'Only accounts whose identity, first or last name contains this text, without regard to case ' +
        `(literal text, never a pattern; at most ${SEARCH_MAX_LENGTH} characters)`,
      errorMessage: `Must be at most ${SEARCH_MAX_LENGTH} characters, without control characters`,
    }),
    status: StringEnum(ACCOUNT_STATUSES, {
      description: 'Only accounts with this status',
      errorMessage: `Must be one of ${ACCOUNT_STATUSES.join(', ')}`,
    }),
    ...(kind === 'admin'
      ? {
          role: StringEnum(ADMIN_ROLES, {
            description: 'Only administrators holding this role',
            errorMessage: `Must be one of ${ADMIN_ROLES.join(', ')}`,
          }),
        }
      : {}),
    sort: StringEnum(ACCOUNT_SORTS, {
      description:
        `The order: ${ACCOUNT_SORT_FIELDS.join(', ')}; a leading "-" sorts descending ` +
        `(default ${DEFAULT_SORT}; ties by id)`,
      errorMessage: `Must be one of ${ACCOUNT_SORT_FIELDS.join(', ')}, optionally with a leading "-"`,
    }),
  };
  return Type.Object(
    Object.fromEntries(Object.entries(parameters).map(([name, schema]) => [name, Type.Optional(schema)])),
    { additionalProperties: false },
  );
}

/** A query's parameters, as the HTTP pipeline reads them: a repeated one is a list. */
export type ListParameters = Readonly<Record<string, string | readonly string[]>>;
type CheckedParameters = Partial<Record<string, string>>;

const LIST_QUERIES = Object.fromEntries(
  (['user', 'admin'] as const).map((kind) => {
    const schema = listQuerySchema(kind);
    const validator: Validator<CheckedParameters> = compileValidator(
      schema,
      (errors) => new BadRequest('The query is invalid', { errors }),
    );
    return [kind, { schema, validator }];
  }),
) as Record<AccountKind, { schema: TObject; validator: Validator<CheckedParameters> }>;

/**
 * The listing a query asks for, checked whoever calls (the route has checked the same schema
 * already): 400 naming each parameter that fails.
 */
export function checkAccountListQuery(kind: AccountKind, parameters: ListParameters): AccountQuery {
  const query = LIST_QUERIES[kind].validator.check(parameters);
  const sort = query.sort ?? DEFAULT_SORT;
  return {
    search: query.search,
    status: query.status as AccountStatus | undefined,
    role: query.role as AdminRole | undefined,
    sort: sort.replace(/^-/, '') as AccountSortField,
    order: sort.startsWith('-') ? 'desc' : 'asc',
    page: Number(query.page ?? 1),
    limit: Number(query.limit ?? DEFAULT_PAGE_SIZE),
  };
}
