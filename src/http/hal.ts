export const HAL_JSON = 'application/hal+json';

export interface HalLink {
  href: string;
}

/** A HAL resource: the fields plus `_links.self` (and any other links). */
export function halResource<T extends object>(fields: T, self: string, links: Record<string, HalLink> = {}) {
  return { ...fields, _links: { self: { href: self }, ...links } };
}

/** A HAL collection page with first/prev/next/last links that keep the other query parameters. */
export function halCollection<T>(options: {
  rel: string;
  items: T[];
  path: string;
  query: URLSearchParams;
  page: number;
  limit: number;
  total: number;
}) {
  const { rel, items, path, query, page, limit, total } = options;
  const last = Math.max(1, Math.ceil(total / limit));
  const link = (n: number): HalLink => {
    const params = new URLSearchParams(query);
    params.set('page', String(n));
    params.set('limit', String(limit));
    return { href: `${path}?${params}` };
  };
  const links: Record<string, HalLink> = { self: link(page), first: link(1), last: link(last) };
  if (page > 1) links.prev = link(Math.min(page - 1, last));
  if (page < last) links.next = link(page + 1);
  return { _embedded: { [rel]: items }, page, limit, total, _links: links };
}
