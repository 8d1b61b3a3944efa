import { Type } from '@sinclair/typebox';
import { type AnyRoute, defineRoute } from '../route.ts';

/** `GET /`: name and version only. It touches no store, so a 200 means only that the process runs. */
export const homeRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/',
    name: 'home',
    summary: 'Application name and version (deprecated, as a demonstration of deprecation headers)',
    tags: ['info'],
    permission: 'public',
    responses: {
      200: {
        description: 'Name and version',
        schema: Type.Object({ name: Type.String(), version: Type.String() }),
      },
    },
    handler: (_request, { about }) => ({ status: 200, body: { name: about.name, version: about.version } }),
  }),
];
