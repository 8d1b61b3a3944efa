import { type AccountManagement, isAccountId } from '../../accounts/management.ts';
import { CreateAdminBody, UpdateAdminBody } from '../../accounts/schemas.ts';
import { Forbidden, NotFound } from '../../errors.ts';
import { type Identity, rolesOf } from '../../identity.ts';
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

const isSuperuser = (identity: Identity) => rolesOf(identity).includes('superuser');

/** What of an administrator only a superuser changes: the credentials, the status, the roles. */
const SUPERUSER_ONLY_FIELDS = ['identity', 'password', 'status', 'roles'] as const;

/**
 * Administrator accounts. Any admin may read them and change the names of plain admins;
 * only a superuser creates or deletes admins, changes an admin's identity, password, status
 * or roles, or touches a superuser's account (an admin's own password goes through
 * `/admins/my-account`, with the current one), and the last active superuser can be neither
 * deleted nor demoted (409). `/admins/my-account` comes before `/admins/:id` for the same
 * reason as with users.
 */
export function adminRoutes(admins: AccountManagement): AnyRoute[] {
  const resource: AccountResource = {
    base: '/admins',
    prefix: 'admin',
    tag: 'admins',
    rel: 'admins',
    collectionId: 'AdminCollection',
    holder: 'admin',
    management: admins,
  };
  const { base } = resource;

  async function existingAdmin(id: string | undefined, options: { deleted: boolean }): Promise<Account> {
    const account = isAccountId(id ?? '') ? await admins.find(id ?? '') : null;
    if (!account || (!options.deleted && account.status === 'deleted')) throw new NotFound('No such admin');
    return account;
  }

  return [
    ...ownAccountRoutes(resource),
    accountListRoute(resource),
    defineRoute({
      method: 'POST',
      path: '/admins',
      name: 'admin::create',
      summary: 'Create an administrator (superuser only; roles default to [admin])',
      tags: ['admins'],
      permission: ['superuser'],
      body: CreateAdminBody,
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
        const account = await admins.create({
          ...body,
          status: body.status ?? 'active',
          roles: body.roles ?? ['admin'],
        });
        return createdReply(account, base);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/admins/:id',
      name: 'admin::view',
      summary: 'Read an administrator account (deleted ones as their anonymised record)',
      tags: ['admins'],
      permission: ['admin'],
      responses: {
        200: { description: 'The account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 404, 503),
      },
      async handler({ params }) {
        return accountReply(await existingAdmin(params.id, { deleted: true }), base);
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/admins/:id',
      name: 'admin::update',
      summary:
        "Change an administrator: names; identity, status, password, roles and superusers' accounts only by a superuser",
      tags: ['admins'],
      permission: ['admin'],
      body: UpdateAdminBody,
      responses: {
        200: { description: 'The updated account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(400, 401, 403, 404, 409, 413, 415, 503),
      },
      async handler({ params, body, identity }) {
        const target = await existingAdmin(params.id, { deleted: false });
        // Without the current password a stolen access token must not be enough to take the account.
        if (body.password !== undefined && target.id === callerAccount(identity).id)
          throw new Forbidden(
            'Change your own password with PATCH /admins/my-account, which asks for the current one',
          );
        if (!isSuperuser(identity)) {
          if (target.roles.includes('superuser'))
            throw new Forbidden("Only a superuser may change a superuser's account");
          const guarded = SUPERUSER_ONLY_FIELDS.filter((field) => body[field] !== undefined);
          if (guarded.length > 0)
            throw new Forbidden(`Only a superuser may change an administrator's ${guarded.join(', ')}`);
        }
        const updated = await admins.update(target, body);
        if (!updated) throw new NotFound('No such admin');
        return accountReply(updated, base);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/admins/:id',
      name: 'admin::delete',
      summary: 'Delete an administrator (superuser only; anonymised; not the last active superuser)',
      tags: ['admins'],
      permission: ['superuser'],
      responses: { 204: { description: 'Deleted' }, ...problems(401, 403, 404, 409, 503) },
      async handler({ params }) {
        await admins.remove(await existingAdmin(params.id, { deleted: false }));
        return { status: 204 };
      },
    }),
  ];
}
