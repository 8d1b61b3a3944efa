import type { GrantType } from '../../oauth/model.ts';
import type { AnyRoute } from '../route.ts';
import { accountPageRoutes } from './account-pages.ts';
import { authorizationEndpointRoutes } from './authorization-endpoint.ts';
import { userAvatarRoutes } from './avatars.ts';
import { errorReportRoutes } from './error-report.ts';
import { homeRoutes } from './home.ts';
import { oauthClientRoutes } from './oauth-clients.ts';
import { selfServiceRoutes } from './self-service.ts';
import { tokenRoutes } from './token-endpoint.ts';
import { adminRoutes, userRoutes } from './users-and-admins.ts';

/**
 * The service's route table: the router, the permission check, `route:list` and the
 * OpenAPI generator all read it. Plain data, built from the enabled grants alone: the
 * handlers receive their services with each request.
 */
export function routeTable(grants: ReadonlySet<GrantType>): AnyRoute[] {
  return [
    ...homeRoutes,
    ...tokenRoutes(grants),
    ...(grants.has('authorization_code') ? authorizationEndpointRoutes : []),
    ...errorReportRoutes,
    // Before the API's routes of the same paths, which take every request a page does not.
    ...accountPageRoutes,
    ...selfServiceRoutes,
    ...userRoutes,
    ...userAvatarRoutes,
    ...adminRoutes,
    ...oauthClientRoutes,
  ];
}
