import { type TSchema, Type } from '@sinclair/typebox';
import { LIST_QUERY_DOC, parseAccountListQuery } from '../../accounts/listing.ts';
import { type AccountManagement, isAccountId } from '../../accounts/management.ts';
import { viewAccount } from '../../accounts/representation.ts';
import { CreateUserBody, OwnProfileBody, UpdateUserBody } from '../../accounts/schemas.ts';
import { Forbidden, NotFound } from '../../errors.ts';
import type { Account } from '../../stores/types.ts';
import { HAL_JSON, halCollection, halResource } from '../hal.ts';
import { type AnyRoute, defineRoute, type Identity, type Reply } from '../route.ts';
import { AccountSchema, problems } from '../schemas.ts';

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
    {
      $id: id,
      description: `Query: ${Object.entries(LIST_QUERY_DOC)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')}`,
    },
  );
}

/** The account of the signed-in caller (the route's permission already admitted only account holders). */
export function callerAccount(identity: Identity): Account {
  if (identity.role === 'user' || identity.role === 'admin') return identity.account;
  throw new Forbidden();
}

/**
 * User accounts. `/users/my-account` is registered before `/users/:id`: the router tries
 * routes in registration order and the first handler answers, so `my-account` never reaches
 * the `:id` route (and `:id` only ever sees UUIDs: anything else is a 404).
 */
export function userRoutes(users: AccountManagement): AnyRoute[] {
  const base = '/users';

  /** An existing, not deleted user by id, for the routes that change one. */
  async function changeableUser(id: string | undefined): Promise<Account> {
    const account = await users.find(id ?? '');
    if (!account || account.status === 'deleted') throw new NotFound('No such user');
    return account;
  }

  return [
    defineRoute({
      method: 'GET',
      path: '/users/my-account',
      name: 'user::view-own',
      summary: "The signed-in user's own account",
      tags: ['users'],
      permission: ['user'],
      responses: {
        200: { description: 'The account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 503),
      },
      handler: ({ identity }) => accountReply(callerAccount(identity), base),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/users/my-account',
      name: 'user::update-own',
      summary: 'Change own names and/or password (with currentPassword; ends the other sessions)',
      tags: ['users'],
      permission: ['user'],
      body: OwnProfileBody,
      responses: {
        200: { description: 'The updated account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(400, 401, 403, 413, 415, 503),
      },
      async handler({ identity, body }) {
        const updated = await users.updateOwn(callerAccount(identity), body);
        if (!updated) throw new NotFound('No such user');
        return accountReply(updated, base);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/users/my-account',
      name: 'user::delete-own',
      summary: 'Delete own account (anonymised; every token of it is refused from now on)',
      tags: ['users'],
      permission: ['user'],
      responses: { 204: { description: 'Deleted' }, ...problems(401, 403, 503) },
      async handler({ identity }) {
        await users.remove(callerAccount(identity));
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/users',
      name: 'user::list',
      summary: 'List user accounts, paginated (?page, ?limit, ?status, ?sort)',
      tags: ['users'],
      permission: ['admin'],
      responses: {
        200: {
          description: 'One page',
          schema: accountCollectionSchema('users', 'UserCollection'),
          contentType: HAL_JSON,
        },
        ...problems(400, 401, 403, 503),
      },
      handler: ({ query }) => accountPage(users, query, base, 'users'),
    }),
    defineRoute({
      method: 'POST',
      path: '/users',
      name: 'user::create',
      summary: 'Create a user account (status defaults to active; no mail is sent)',
      tags: ['users'],
      permission: ['admin'],
      body: CreateUserBody,
      responses: {
        201: { description: 'The account; Location names it', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(400, 401, 403, 409, 413, 415, 503),
      },
      async handler({ body }) {
        const account = await users.create({ ...body, status: body.status ?? 'active', roles: [] });
        return createdReply(account, base);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/users/:id',
      name: 'user::view',
      summary: 'Read a user account (admins: any, deleted ones as their anonymised record; users: their own)',
      tags: ['users'],
      permission: ['admin', 'user'],
      responses: {
        200: { description: 'The account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 404, 503),
      },
      async handler({ params, identity }) {
        const id = params.id ?? '';
        if (!isAccountId(id)) throw new NotFound('No such user');
        // Refused before the lookup, so a user cannot probe which ids exist.
        if (identity.role === 'user' && identity.account.id !== id)
          throw new Forbidden('Users may only read their own account');
        const account = await users.find(id);
        if (!account) throw new NotFound('No such user');
        return accountReply(account, base);
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/users/:id',
      name: 'user::update',
      summary:
        'Change a user account: names, identity, status, password (a password change ends its sessions)',
      tags: ['users'],
      permission: ['admin'],
      body: UpdateUserBody,
      responses: {
        200: { description: 'The updated account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(400, 401, 403, 404, 409, 413, 415, 503),
      },
      async handler({ params, body }) {
        const updated = await users.update(await changeableUser(params.id), body);
        if (!updated) throw new NotFound('No such user');
        return accountReply(updated, base);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/users/:id',
      name: 'user::delete',
      summary: 'Delete a user account (anonymised; its tokens are refused from now on)',
      tags: ['users'],
      permission: ['admin'],
      responses: { 204: { description: 'Deleted' }, ...problems(401, 403, 404, 503) },
      async handler({ params }) {
        await users.remove(await changeableUser(params.id));
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/users/:id/activate',
      name: 'user::activate',
      summary: 'Activate a pending or inactive user account',
      tags: ['users'],
      permission: ['admin'],
      responses: {
        200: { description: 'The active account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 404, 503),
      },
      async handler({ params }) {
        const activated = await users.activate(await changeableUser(params.id));
        if (!activated) throw new NotFound('No such user');
        return accountReply(activated, base);
      },
    }),
  ];
}
