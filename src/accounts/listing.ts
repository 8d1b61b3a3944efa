import { Type } from '@sinclair/typebox';
import { Literals, QueryInteger } from '../validation.ts';
import {
  ACCOUNT_SORT_FIELDS,
  ACCOUNT_STATUSES,
  type AccountQuery,
  type AccountSortField,
  type AccountStatus,
} from './model.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
/** Far beyond any page a listing has; it bounds the number the stores are asked to skip to. */
const MAX_PAGE = 999_999;

/**
 * The query of the account collections. Unknown and repeated parameters fail, rather than
 * being guessed at.
 */
export const AccountListQuery = Type.Object(
  {
    page: Type.Optional(
      QueryInteger({
        minimum: 1,
        maximum: MAX_PAGE,
        description: 'Page number, from 1 (default 1)',
        errorMessage: 'Must be a whole number from 1',
      }),
    ),
    limit: Type.Optional(
      QueryInteger({
        minimum: 1,
        maximum: MAX_PAGE_SIZE,
        description: `Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
        errorMessage: `Must be a whole number from 1 to ${MAX_PAGE_SIZE}`,
      }),
    ),
    status: Type.Optional(
      Literals(ACCOUNT_STATUSES, {
        description: 'Only accounts with this status',
        errorMessage: `Must be one of ${ACCOUNT_STATUSES.join(', ')}`,
      }),
    ),
    sort: Type.Optional(
      Type.String({
        pattern: `^-?(${ACCOUNT_SORT_FIELDS.join('|')})$`,
        description: `${ACCOUNT_SORT_FIELDS.join(', ')}; a leading "-" sorts descending (default createdAt)`,
        errorMessage: `Must be one of ${ACCOUNT_SORT_FIELDS.join(', ')}, optionally with a leading "-"`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Reads a query that passed AccountListQuery. */
export function parseAccountListQuery(query: URLSearchParams): AccountQuery {
  const sort = query.get('sort') ?? 'createdAt';
  return {
    status: (query.get('status') ?? undefined) as AccountStatus | undefined,
    sort: sort.replace(/^-/, '') as AccountSortField,
    order: sort.startsWith('-') ? 'desc' : 'asc',
    page: Number(query.get('page') ?? 1),
    limit: Number(query.get('limit') ?? DEFAULT_PAGE_SIZE),
  };
}
