import { viewAccount } from '../../accounts/representation.ts';
import { Forbidden, NotFound } from '../../errors.ts';
import type { AccountStore } from '../../stores/types.ts';
import { HAL_JSON, halResource } from '../hal.ts';
import { type AnyRoute, defineRoute } from '../route.ts';
import { AccountSchema, problems } from '../schemas.ts';

export function userRoutes(users: AccountStore): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/users/:id',
      name: 'user::view',
      summary: 'Read a user account (admins: any; users: their own)',
      tags: ['users'],
      permission: ['admin', 'user'],
      responses: {
        200: { description: 'The account', schema: AccountSchema, contentType: HAL_JSON },
        ...problems(401, 403, 404, 503),
      },
      async handler({ params, identity }) {
        const id = params.id ?? '';
        // Checked before the lookup, so a user cannot probe which ids exist.
        if (identity.role === 'user' && identity.account.id !== id)
          throw new Forbidden('Users may only read their own account');
        const account = await users.findById(id);
        if (!account || account.status === 'deleted') throw new NotFound('No such user');
        return {
          status: 200,
          contentType: HAL_JSON,
          body: halResource(viewAccount(account), `/users/${account.id}`),
        };
      },
    }),
  ];
}
