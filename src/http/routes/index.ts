import type { GrantType } from '../../oauth/model.ts';
import type { AnyRoute } from '../route.ts';
import { accountRoutes } from './account.ts';
import { adminRoutes, userRoutes } from './accounts.ts';
import { authorizeRoutes } from './authorize.ts';
import { errorReportRoutes } from './error-report.ts';
import { homeRoutes } from './home.ts';
import { oauthClientRoutes } from './oauth-clients.ts';
import { tokenRoutes } from './security.ts';

/**
 * The service's route table: the router, the authorization step, `route:list` and the
 * OpenAPI generator all read it. Plain data, built from the enabled grants alone: the
 * handlers receive their services with each request.
 */
export function routeTable(grants: ReadonlySet<GrantType>): AnyRoute[] {
  return [
    ...homeRoutes,
    ...tokenRoutes(grants),
    ...(grants.has('authorization_code') ? authorizeRoutes : []),
    ...errorReportRoutes,
    ...accountRoutes,
    ...userRoutes,
    ...adminRoutes,
    ...oauthClientRoutes,
  ];
}
