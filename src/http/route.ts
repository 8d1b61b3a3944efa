import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Static, TSchema } from '@sinclair/typebox';
import type { AccountFlows } from '../accounts/account-flows.ts';
import type { AccountForms } from '../accounts/account-forms.ts';
import type { Avatars } from '../accounts/avatars.ts';
import type { AccountManagement } from '../accounts/management.ts';
import type { AccountKind } from '../accounts/model.ts';
import type { Caller, Role } from '../caller.ts';
import type { ErrorReportReceiver } from '../error-report/error-report.ts';
import type { AuthorizationEndpoint } from '../oauth/authorization-endpoint.ts';
import type { ClientManagement } from '../oauth/client-management.ts';
import type { TokenEndpoint } from '../oauth/token-endpoint.ts';
import type { ErrorFormat } from './problem.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface RequestContext<Body = unknown> {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed body, already validated against the route's schema unless the handler checks it. */
  body: Body;
  /** Who sent the request: an account, a client, or a guest (no `Authorization`). */
  caller: Caller;
  /** The socket peer address (before any proxy header is considered). */
  remoteAddress: string;
}

/**
 * What a handler is handed with each request, besides the request: the services the
 * composition root built once. Routes are plain data and hold no service themselves, so the
 * route table can be read (route:list, openapi:generate) without building any.
 */
export interface Services {
  /** Name and version, as `GET /` tells them. */
  about: { name: string; version: string };
  tokenEndpoint: TokenEndpoint;
  errorReports: ErrorReportReceiver;
  accountFlows: AccountFlows;
  /** The account pages' forms, over those flows. */
  accountForms: AccountForms;
  accounts: Readonly<Record<AccountKind, AccountManagement>>;
  avatars: Avatars;
  oauthClients: ClientManagement;
  /** The authorization endpoint and its sign-in form. */
  authorizationEndpoint: AuthorizationEndpoint;
}

export interface Reply {
  status: number;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, for the media types that are not JSON (a page, a stylesheet, an image). */
  text?: string | Uint8Array;
  /** Defaults to application/json; resources use application/hal+json. */
  contentType?: string;
  headers?: Record<string, string>;
}

/** A documented response of a route, for the OpenAPI description. */
export interface ResponseSpec {
  description: string;
  schema?: TSchema;
  /** The media type of the body (application/json unless said otherwise), or those it may come in. */
  contentType?: string | readonly string[];
  /** The response headers a client may rely on, by name. */
  headers?: Readonly<Record<string, HeaderSpec>>;
}

/** A documented response header. */
export interface HeaderSpec {
  description: string;
  schema: TSchema;
  /** Whether every such response carries it (otherwise the description says when). */
  required: boolean;
}

/**
 * A route is data: the router, the permission check, `route:list` and the OpenAPI
 * generator all read the same table, so they cannot drift apart.
 */
export interface Route<S extends TSchema | undefined = TSchema | undefined> {
  method: HttpMethod;
  /** A polka path pattern, e.g. `/users/:id`: case-insensitive, with an optional trailing slash. */
  path: string;
  name: string;
  summary: string;
  tags: readonly string[];
  /** `public`: anyone, without looking at credentials. Otherwise the roles that may call it. */
  permission: 'public' | readonly Role[];
  /** The request body's schema: checked before the handler runs, and shown by the OpenAPI description. */
  body?: S;
  /**
   * The media types the body may come in; any other is refused with 415. Unless said
   * otherwise, JSON only (`application/json` and `application/*+json`).
   */
  bodyMediaTypes?: readonly string[];
  /**
   * A body the handler reads itself as it arrives (a file upload, with limits of its own rather
   * than BODY_LIMIT): the pipeline leaves it unread. Its media types, each with the schema the
   * OpenAPI description shows for it.
   */
  upload?: Readonly<Record<string, TSchema>>;
  /**
   * `handler`: the handler checks the body and the query itself, and the schemas only
   * describe them. The token endpoint does, because RFC 6749 words every refusal as an OAuth
   * error and orders them its own way: empty parameters count as omitted and repeated ones
   * are refused (§3.2), the client is authenticated before the grant reads its parameters.
   * So does the authorization endpoint, which must know the client and its redirect URI
   * before it may say anything else is wrong (§4.1.2.1).
   */
  checkedBy?: 'pipeline' | 'handler';
  /**
   * The query parameters, validated before the handler runs (unless `checkedBy` says otherwise). Values arrive as strings: a
   * number among them is a QueryInteger, which checks the digits and documents an integer.
   */
  query?: TSchema;
  /** Success and problem responses by status, for documentation. */
  responses: Readonly<Record<number, ResponseSpec>>;
  /**
   * A page at the path of an API route (docs/api.md, "Pages for people"): it takes only what a
   * browser sends for a page, a GET whose `Accept` prefers `text/html` or a POST of a form
   * (negotiation.ts). Any other request goes on to the next route of its method and path, the
   * API's, as if this one were not there. It must come before that route in the table.
   */
  forBrowsers?: true;
  /** How failures are written; `problem` unless the route is an OAuth token endpoint or a page. */
  errors?: ErrorFormat;
  handler(
    context: RequestContext<S extends TSchema ? Static<S> : undefined>,
    services: Services,
  ): Promise<Reply> | Reply;
}

/** Erases a route's body type so routes of different shapes can share one table. */
export type AnyRoute = Route<TSchema | undefined>;

export function defineRoute<S extends TSchema | undefined = undefined>(route: Route<S>): AnyRoute {
  return route as unknown as AnyRoute;
}
