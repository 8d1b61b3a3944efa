import { BadRequest } from '../errors.ts';
import type { AccountQuery, AccountSortField, AccountStatus } from '../stores/types.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

const STATUSES: readonly AccountStatus[] = ['pending', 'active', 'inactive', 'deleted'];
const SORT_FIELDS: readonly AccountSortField[] = ['identity', 'createdAt', 'updatedAt', 'status'];
const KNOWN = new Set(['page', 'limit', 'status', 'sort']);

/** The query parameters of the account collections, documented once for the route table. */
export const LIST_QUERY_DOC = {
  page: 'Page number, from 1 (default 1)',
  limit: `Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
  status: `Only accounts with this status: ${STATUSES.join(', ')}`,
  sort: `${SORT_FIELDS.join(', ')}; a leading "-" sorts descending (default createdAt)`,
};

/**
 * Reads `page`, `limit`, `status` and `sort` (`identity`, `-createdAt`, ...). Anything else,
 * a repeated parameter or a bad value is a 400 with an error per parameter, rather than a
 * guess at what the client meant.
 */
export function parseAccountListQuery(query: URLSearchParams): AccountQuery {
  const errors: Record<string, string[]> = {};
  const fail = (name: string, message: string) => {
    errors[name] = [...(errors[name] ?? []), message];
  };
  for (const name of new Set(query.keys())) {
    if (!KNOWN.has(name)) fail(name, 'Unknown query parameter');
    else if (query.getAll(name).length > 1) fail(name, 'Must be given once');
  }
  const page = integerParam(query.get('page'), 1, 1, 1_000_000);
  if (page === undefined) fail('page', 'Must be a whole number from 1');
  const limit = integerParam(query.get('limit'), DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE);
  if (limit === undefined) fail('limit', `Must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  const rawStatus = query.get('status');
  if (rawStatus !== null && !(STATUSES as readonly string[]).includes(rawStatus))
    fail('status', `Must be one of ${STATUSES.join(', ')}`);
  const rawSort = query.get('sort') ?? 'createdAt';
  const sortField = rawSort.replace(/^-/, '');
  if (!(SORT_FIELDS as readonly string[]).includes(sortField))
    fail('sort', `Must be one of ${SORT_FIELDS.join(', ')}, optionally with a leading "-"`);
  if (Object.keys(errors).length > 0) throw new BadRequest('The query is invalid', { errors });
  return {
    status: (rawStatus ?? undefined) as AccountStatus | undefined,
    sort: sortField as AccountSortField,
    order: rawSort.startsWith('-') ? 'desc' : 'asc',
    page: page as number,
    limit: limit as number,
  };
}

function integerParam(raw: string | null, fallback: number, min: number, max: number): number | undefined {
  if (raw === null) return fallback;
  if (!/^\d{1,7}$/.test(raw)) return undefined;
  const value = Number(raw);
  return value >= min && value <= max ? value : undefined;
}
