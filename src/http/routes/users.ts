import { type AccountManagement, isAccountId } from '../../accounts/management.ts';
import { CreateUserBody, UpdateUserBody } from '../../accounts/schemas.ts';
import { Forbidden, NotFound } from '../../errors.ts';
import type { Account } from '../../stores/types.ts';
import { HAL_JSON } from '../hal.ts';
import { type AnyRoute, defineRoute } from '../route.ts';
import { AccountSchema, LOCATION, problems } from '../schemas.ts';
import {
  type AccountResource,
  accountListRoute,
  accountReply,
  callerAccount,
  createdReply,
  ownAccountRoutes,
} from './account-resources.ts';

/**
 * User accounts. `/users/my-account` is registered before `/users/:id`: the router tries
 * routes in registration order and the first handler answers, so `my-account` never reaches
 * the `:id` route (and `:id` only ever sees UUIDs: anything else is a 404).
 */
export function userRoutes(users: AccountManagement): AnyRoute[] {
  const resource: AccountResource = {
    base: '/users',
    prefix: 'user',
    tag: 'users',
    rel: 'users',
    collectionId: 'UserCollection',
    holder: 'user',
    management: users,
  };
  const { base } = resource;

  /** An existing, not deleted user by id, for the routes that change one. */
  async function changeableUser(id: string | undefined): Promise<Account> {
    const account = await users.find(id ?? '');
    if (!account || account.status === 'deleted') throw new NotFound('No such user');
    return account;
  }

  return [
    ...ownAccountRoutes(resource),
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
    accountListRoute(resource),
    defineRoute({
      method: 'POST',
      path: '/users',
      name: 'user::create',
      summary: 'Create a user account (status defaults to active; no mail is sent)',
      tags: ['users'],
      permission: ['admin'],
      body: CreateUserBody,
      responses: {
        201: {
          description: 'The account; Location names it',
          schema: AccountSchema,
          contentType: HAL_JSON,
          headers: LOCATION,
        },
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
        // A user's own account was loaded by authentication a moment ago.
        const account = identity.role === 'user' ? identity.account : await users.find(id);
        if (!account) throw new NotFound('No such user');
        return accountReply(account, base);
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/users/:id',
      name: 'user::update',
      summary:
        'Change a user account: names, identity, status, password (a new password, identity or status ends its sessions)',
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
