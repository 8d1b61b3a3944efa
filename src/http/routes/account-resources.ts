import { type TSchema, Type } from '@sinclair/typebox';
import { AccountListQuery, parseAccountListQuery } from '../../accounts/listing.ts';
import type { AccountManagement } from '../../accounts/management.ts';
import { viewAccount } from '../../accounts/representation.ts';
import { OwnProfileBody } from '../../accounts/schemas.ts';
import { Forbidden, NotFound } from '../../errors.ts';
import type { Identity } from '../../identity.ts';
import type { Account } from '../../stores/types.ts';
import { HAL_JSON, halCollection, halResource } from '../hal.ts';
import { type AnyRoute, defineRoute, type Reply } from '../route.ts';
import { AccountSchema, problems } from '../schemas.ts';

/**
 * What user and admin accounts have in common over HTTP: their HAL form, their paginated
 * collection, and the routes on the caller's own account and on the list.
 */
/** An account as a HAL resource; `base` is `/users` or `/admins`. */
export function accountReply(account: Account, base: string, status = 200): Reply {
  return { status, contentType: HAL_JSON, body: halResource(viewAccount(account), `${base}/${account.id}`) };
}

/** 201 with Location for a created account. */
export function createdReply(account: Account, base: string): Reply {
  return { ...accountReply(account, base, 201), headers: { Location: `${base}/${account.id}` } };
}

/** One page of accounts as a HAL collection (`_embedded.<rel>`, page, limit, total, navigation links). */
export async function accountPage(
  management: AccountManagement,
  query: URLSearchParams,
  base: string,
  rel: string,
): Promise<Reply> {
  const parsed = parseAccountListQuery(query);
  const { items, total } = await management.list(parsed);
  return {
    status: 200,
    contentType: HAL_JSON,
    body: halCollection({
      rel,
      items: items.map((account) => halResource(viewAccount(account), `${base}/${account.id}`)),
      path: base,
      query,
      page: parsed.page,
      limit: parsed.limit,
      total,
    }),
  };
}

export function accountCollectionSchema(rel: string, id: string): TSchema {
  const link = Type.Object({ href: Type.String() });
  return Type.Object(
    {
      _embedded: Type.Object({ [rel]: Type.Array(AccountSchema) }),
      page: Type.Integer(),
      limit: Type.Integer(),
      total: Type.Integer(),
      _links: Type.Object({
        self: link,
        first: link,
        last: link,
        prev: Type.Optional(link),
        next: Type.Optional(link),
      }),
    },
    { $id: id },
  );
}

/** The account of the signed-in caller (the route's permission already admitted only account holders). */
export function callerAccount(identity: Identity): Account {
  if (identity.role === 'user' || identity.role === 'admin') return identity.account;
  throw new Forbidden();
}

/** How one kind of account is exposed: `/users` with `user::` names, or `/admins` with `admin::`. */
export interface AccountResource {
  base: '/users' | '/admins';
  /** Route-name prefix and OpenAPI tag. */
  prefix: 'user' | 'admin';
  tag: string;
  /** `_embedded` relation and OpenAPI schema id of a page. */
  rel: string;
  collectionId: string;
  /** Who holds such an account. */
  holder: 'user' | 'admin';
  management: AccountManagement;
}

/** `GET` and `PATCH <base>/my-account`: the caller's own account. */
export function ownAccountRoutes(resource: AccountResource): AnyRoute[] {
  const { base, prefix, tag, holder, management } = resource;
  return [
    defineRoute({
      method: 'GET',
      path: `${base}/my-account`,
      name: `${prefix}::view-own`,
      summary: `The signed-in ${holder === 'admin' ? 'administrator' : 'user'}'s own account`,
      tags: [tag],
      permission: [holder],
      responses: {
        200: { description: 'The account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 503),
      },
      handler: ({ identity }) => accountReply(callerAccount(identity), base),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${base}/my-account`,
      name: `${prefix}::update-own`,
      summary:
        'Change own names and/or password (with currentPassword; a new password ends every session, this one too)',
      tags: [tag],
      permission: [holder],
      body: OwnProfileBody,
      responses: {
        200: { description: 'The updated account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(400, 401, 403, 413, 415, 503),
      },
      async handler({ identity, body }) {
        const updated = await management.updateOwn(callerAccount(identity), body);
        if (!updated) throw new NotFound(`No such ${prefix}`);
        return accountReply(updated, base);
      },
    }),
  ];
}

/** `GET <base>`: one page of accounts, for admins. */
export function accountListRoute(resource: AccountResource): AnyRoute {
  const { base, prefix, tag, rel, collectionId, holder, management } = resource;
  return defineRoute({
    method: 'GET',
    path: base,
    name: `${prefix}::list`,
    summary: `List ${holder === 'admin' ? 'administrator' : 'user'} accounts, paginated (?page, ?limit, ?status, ?sort)`,
    tags: [tag],
    permission: ['admin'],
    query: AccountListQuery,
    responses: {
      200: {
        description: 'One page',
        schema: accountCollectionSchema(rel, collectionId),
        contentType: HAL_JSON,
      },
      ...problems(400, 401, 403, 503),
    },
    handler: ({ query }) => accountPage(management, query, base, rel),
  });
}
