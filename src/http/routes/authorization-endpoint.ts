import { Type } from '@sinclair/typebox';
import {
  type AuthorizationStep,
  MAX_SCOPE_LENGTH,
  MAX_STATE_LENGTH,
} from '../../oauth/authorization-endpoint.ts';
import { HTML, HTML_MEDIA_TYPE, pageHeaders, STYLESHEET, STYLESHEET_PATH } from '../pages/page.ts';
import { AUTHORIZE_PATH, signInPage } from '../pages/sign-in.ts';
import { type AnyRoute, defineRoute, type HeaderSpec, type Reply, type ResponseSpec } from '../route.ts';

/**
 * The authorization endpoint (RFC 6749 §3.1) and its sign-in page: pages for a person in a
 * browser, so every answer, a failure too, is a page or a redirect, never JSON.
 */

const PAGE = Type.String({ description: 'An HTML page' });
const STYLESHEET_CACHING = 'public, max-age=3600';

const FIXED_PAGE_HEADERS = pageHeaders();
const fixedPageHeader = (name: string, description: string): HeaderSpec => ({
  description,
  schema: Type.Literal(FIXED_PAGE_HEADERS[name] ?? ''),
  required: true,
});

/**
 * What every page is sent with (see pageHeaders). Documented, these are also the headers
 * CONFIG_FILE cannot set for these routes.
 */
const PAGE_HEADERS: Record<string, HeaderSpec> = {
  'Content-Security-Policy': {
    description:
      "`default-src 'none'; style-src 'self'; form-action 'self' <origin of the redirect URI, or a private-use redirect URI's scheme>; frame-ancestors 'none'; …`",
    schema: Type.String({ pattern: "^default-src 'none'; .*frame-ancestors 'none'" }),
    required: true,
  },
  'X-Frame-Options': fixedPageHeader('X-Frame-Options', 'No page is ever framed'),
  'Cache-Control': fixedPageHeader('Cache-Control', 'Pages are never cached'),
  Pragma: fixedPageHeader('Pragma', 'Pages are never cached, by HTTP/1.0 caches either'),
  'Referrer-Policy': fixedPageHeader('Referrer-Policy', 'The page address goes to no other site'),
  'X-Content-Type-Options': fixedPageHeader('X-Content-Type-Options', 'A page is HTML, never sniffed'),
};

/** A documented page response. */
export const page = (description: string): ResponseSpec => ({
  description,
  schema: PAGE,
  contentType: HTML_MEDIA_TYPE,
  headers: PAGE_HEADERS,
});

/** RFC 6749 §4.1.2 and RFC 9207: back to the client, with `iss` and the request's `state`. */
const redirect = (description: string, query: string): ResponseSpec => ({
  description,
  headers: {
    Location: {
      description: `The redirect URI of the request with ${query}, \`state\` (when the request had one) and \`iss\``,
      schema: Type.String({ format: 'uri' }),
      required: true,
    },
  },
});

/** The failures any page that takes a form may answer, as pages. */
export const FAILURE_PAGES = {
  413: page('Request body too large'),
  415: page('The form must be application/x-www-form-urlencoded'),
  500: page('Unexpected error; the details go to the error log only'),
  503: page('A backend is unavailable; the page says to try again shortly'),
};

const AuthorizationQuery = Type.Object({
  response_type: Type.Literal('code', {
    description: 'Only `code`: the implicit grant (`token`) is refused',
  }),
  client_id: Type.String({ description: 'A client registered with the authorization_code grant' }),
  redirect_uri: Type.String({
    description:
      "One of the client's redirect URIs, exactly (for http://127.0.0.1 and http://[::1], any port)",
  }),
  scope: Type.String({
    maxLength: MAX_SCOPE_LENGTH,
    description: 'Space-delimited scopes; the only registered scope is `api`',
  }),
  state: Type.Optional(
    Type.String({
      maxLength: MAX_STATE_LENGTH,
      pattern: '^[ -~]+$',
      description:
        'Handed back untouched in the redirect; visible ASCII and the space (RFC 6749 Appendix A.5)',
    }),
  ),
  code_challenge: Type.String({
    pattern: '^[A-Za-z0-9_-]{43}$',
    description: 'RFC 7636: BASE64URL(SHA256(code_verifier))',
  }),
  code_challenge_method: Type.Literal('S256', { description: '`plain` is refused' }),
});

const SignInBody = Type.Object(
  {
    csrf_token: Type.String({
      description:
        'The one-time value of the form: names the authorization request, used up once this post has checked the password',
    }),
    username: Type.String({ minLength: 1, maxLength: 320 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false, description: 'The sign-in form, as the browser posts it' },
);

/** A request header as one string: Node joins a repeated one with commas (set-cookie aside). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function reply(step: AuthorizationStep): Reply {
  if (step.outcome === 'redirect')
    // 303: the browser follows with a GET, never posting the password again (RFC 9700 §4.12).
    return { status: 303, headers: { Location: step.location, ...pageHeaders() } };
  const { form } = step;
  return {
    status: form.error === undefined ? 200 : 400,
    contentType: HTML,
    text: signInPage(form),
    headers: pageHeaders([form.redirectOrigin]),
  };
}

/** The authorization endpoint's route (RFC 6749 §3.1), by name, for those who look its path up. */
export const AUTHORIZATION_ROUTE = 'security::authorize';

export const authorizationEndpointRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: AUTHORIZE_PATH,
    name: AUTHORIZATION_ROUTE,
    summary: 'Start the authorization code grant with PKCE: the sign-in page',
    tags: ['security'],
    permission: 'public',
    query: AuthorizationQuery,
    checkedBy: 'handler',
    errors: 'page',
    responses: {
      200: page("The sign-in page, with the client's name"),
      303: redirect(
        'A refused request whose client and redirect URI are known good, back to that redirect URI',
        '`error` and `error_description`',
      ),
      400: page('The client or the redirect URI is wrong: the page says so and redirects nowhere'),
      500: FAILURE_PAGES[500],
      503: FAILURE_PAGES[503],
    },
    handler: async ({ query }, { authorizationEndpoint }) => reply(await authorizationEndpoint.begin(query)),
  }),
  defineRoute({
    method: 'POST',
    path: AUTHORIZE_PATH,
    name: 'security::sign-in',
    summary: 'Sign in with the form of the sign-in page; on success, back to the client with a code',
    tags: ['security'],
    permission: 'public',
    body: SignInBody,
    bodyMediaTypes: ['application/x-www-form-urlencoded'],
    errors: 'page',
    responses: {
      303: redirect('Signed in: back to the client', 'the authorization `code`'),
      400: page(
        'Invalid credentials: the form again, for the same request; or a page saying the form expired, ' +
          'was used already or is incomplete',
      ),
      403: page(
        'The form was posted from another site: a `Sec-Fetch-Site` other than `same-origin`, or an ' +
          '`Origin` other than that of APP_URL (login CSRF)',
      ),
      ...FAILURE_PAGES,
    },
    handler: async ({ body, req }, { authorizationEndpoint }) =>
      reply(
        await authorizationEndpoint.signIn({
          csrfToken: body.csrf_token,
          username: body.username,
          password: body.password,
          sentFrom: { origin: req.headers.origin, fetchSite: headerValue(req.headers['sec-fetch-site']) },
        }),
      ),
  }),
  defineRoute({
    method: 'GET',
    path: STYLESHEET_PATH,
    name: 'security::stylesheet',
    summary: 'The stylesheet of the sign-in page',
    tags: ['security'],
    permission: 'public',
    responses: {
      200: {
        description: 'CSS',
        schema: Type.String({ description: 'A stylesheet' }),
        contentType: 'text/css',
        headers: {
          'Cache-Control': {
            description: 'Browsers and caches may keep it for an hour',
            schema: Type.Literal(STYLESHEET_CACHING),
            required: true,
          },
        },
      },
    },
    handler: () => ({
      status: 200,
      contentType: 'text/css; charset=utf-8',
      text: STYLESHEET,
      headers: { 'Cache-Control': STYLESHEET_CACHING },
    }),
  }),
];
