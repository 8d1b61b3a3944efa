import { Type } from '@sinclair/typebox';
import { CLIENT_MANAGERS, type ClientWithSecret } from '../../oauth/client-management.ts';
import { viewClient } from '../../oauth/client-representation.ts';
import {
  ClientAccounts,
  ClientGrants,
  ClientName,
  ClientTypeSchema,
  CreateClientBody,
  RedirectUris,
  UpdateClientBody,
} from '../../oauth/client-schemas.ts';
import { HAL_JSON, halResource } from '../hal.ts';
import { type AnyRoute, defineRoute, type Reply } from '../route.ts';
import { LOCATION, problems } from '../schemas.ts';

const BASE = '/oauth-clients';

const OAuthClientSchema = Type.Object(
  {
    name: ClientName,
    type: ClientTypeSchema,
    accounts: ClientAccounts,
    grants: ClientGrants,
    redirectUris: RedirectUris,
    previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        'Until when the secret before the last rotation is still accepted; null when it is not ' +
        '(no rotation with an overlap, the overlap is over, or it was retired)',
    }),
    secret: Type.Optional(
      Type.String({
        description:
          "A confidential client's secret: only in the answer that made it (creation, `rotateSecret`), never again",
      }),
    ),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    _links: Type.Object({ self: Type.Object({ href: Type.String() }) }),
  },
  { $id: 'OAuthClient' },
);

const OAuthClientCollection = Type.Object(
  {
    _embedded: Type.Object({ 'oauth-clients': Type.Array(OAuthClientSchema) }),
    total: Type.Integer(),
    _links: Type.Object({ self: Type.Object({ href: Type.String() }) }),
  },
  {
    $id: 'OAuthClientCollection',
    description: 'Every client, by name: clients are few, so there are no pages',
  },
);

const CLIENT = { schema: OAuthClientSchema, contentType: HAL_JSON };

function clientResource({ client, secret }: ClientWithSecret) {
  return halResource(
    { ...viewClient(client), ...(secret === undefined ? {} : { secret }) },
    `${BASE}/${encodeURIComponent(client.name)}`,
  );
}

function clientReply(result: ClientWithSecret, status = 200): Reply {
  // A secret is in the body: no cache may keep it.
  const headers: Record<string, string> = result.secret === undefined ? {} : { 'Cache-Control': 'no-store' };
  return { status, contentType: HAL_JSON, body: clientResource(result), headers };
}

const facts = { tags: ['oauth-clients'], permission: CLIENT_MANAGERS };

/** The registration of OAuth clients, by superusers: declarations only, the client service decides. */
export const oauthClientRoutes: readonly AnyRoute[] = [
  defineRoute({
    ...facts,
    method: 'GET',
    path: BASE,
    name: 'oauth-client::list',
    summary: 'List every OAuth client (superuser only)',
    responses: {
      200: { description: 'Every client', schema: OAuthClientCollection, contentType: HAL_JSON },
      ...problems(401, 403, 503),
    },
    async handler({ caller }, { oauthClients }) {
      const clients = await oauthClients.list(caller);
      const body = halResource(
        {
          _embedded: { 'oauth-clients': clients.map((client) => clientResource({ client })) },
          total: clients.length,
        },
        BASE,
      );
      return { status: 200, contentType: HAL_JSON, body };
    },
  }),
  defineRoute({
    ...facts,
    method: 'POST',
    path: BASE,
    name: 'oauth-client::create',
    summary: "Register an OAuth client (superuser only); a confidential one's secret is in this answer only",
    body: CreateClientBody,
    responses: {
      201: { description: 'The client; Location names it', ...CLIENT, headers: LOCATION },
      ...problems(400, 401, 403, 409, 413, 415, 503),
    },
    async handler({ caller, body }, { oauthClients }) {
      const created = await oauthClients.create(caller, body);
      const reply = clientReply(created, 201);
      return {
        ...reply,
        headers: { ...reply.headers, Location: `${BASE}/${encodeURIComponent(created.client.name)}` },
      };
    },
  }),
  defineRoute({
    ...facts,
    method: 'GET',
    path: `${BASE}/:name`,
    name: 'oauth-client::view',
    summary: 'Read an OAuth client (superuser only)',
    responses: { 200: { description: 'The client', ...CLIENT }, ...problems(401, 403, 404, 503) },
    handler: async ({ caller, params }, { oauthClients }) =>
      clientReply({ client: await oauthClients.view(caller, params.name ?? '') }),
  }),
  defineRoute({
    ...facts,
    method: 'PATCH',
    path: `${BASE}/:name`,
    name: 'oauth-client::update',
    summary:
      'Change the redirect URIs or grants of an OAuth client, or rotate its secret with an overlap (superuser only)',
    body: UpdateClientBody,
    responses: {
      200: { description: 'The client; with `rotateSecret`, its new secret', ...CLIENT },
      ...problems(400, 401, 403, 404, 409, 413, 415, 503),
    },
    handler: async ({ caller, params, body }, { oauthClients }) =>
      clientReply(await oauthClients.update(caller, params.name ?? '', body)),
  }),
  defineRoute({
    ...facts,
    method: 'DELETE',
    path: `${BASE}/:name`,
    name: 'oauth-client::delete',
    summary: 'Delete an OAuth client (superuser only); its refresh tokens and codes are refused from then on',
    responses: { 204: { description: 'Deleted' }, ...problems(401, 403, 404, 409, 503) },
    async handler({ caller, params }, { oauthClients }) {
      await oauthClients.remove(caller, params.name ?? '');
      return { status: 204 };
    },
  }),
];
