import { type TSchema, Type } from '@sinclair/typebox';
import type { AccountPage, AccountPageStep } from '../../accounts/account-forms.ts';
import { ACCOUNT_PAGE_PATHS, accountPage, accountPageFields } from '../pages/account.ts';
import { HTML, pageHeaders } from '../pages/page.ts';
import { signInReturnPath } from '../pages/sign-in.ts';
import { type AnyRoute, defineRoute, type Reply, type ResponseSpec } from '../route.ts';
import { FAILURE_PAGES, headerValue, page as pageResponse } from './authorization-endpoint.ts';

/**
 * The account pages (docs/api.md, "Pages for people"): at the paths of the account routes a
 * person reaches from a mail or from the sign-in page, a browser's GET gets the page and its
 * form posts back to the same path. They come before the API's routes in the table and take
 * only a browser's requests (`forBrowsers`); a JSON request goes on to the API as before. They
 * are pages, not API: the OpenAPI document leaves them out.
 */

/** What a browser may send back as `return`: checked by signInReturnPath, ignored when it is not a sign-in path. */
const ReturnQuery = Type.Object({
  return: Type.Optional(
    Type.String({ description: 'A same-origin `/security/authorize?…` path: the sign-in to come back to' }),
  ),
});

/** The longest field the pages take; the flows hold each field to its own, shorter, limit. */
const MAX_FIELD_LENGTH = 32_000;

/** A page's form as the browser posts it: the flow checks the fields, and the page shows what it says. */
function formBody(page: AccountPage): TSchema {
  const fields = Object.fromEntries(
    accountPageFields(page).map((name) => [
      name,
      Type.Optional(Type.String({ maxLength: MAX_FIELD_LENGTH })),
    ]),
  );
  return Type.Object(
    {
      csrf_token: Type.String({ maxLength: MAX_FIELD_LENGTH, description: 'The one-time value of the form' }),
      ...fields,
    },
    { additionalProperties: false, description: 'The form of the page' },
  );
}

/** The path a page's form posts to: the page's own, with the link's hash. */
function actionOf(page: AccountPage, hash: string | undefined): string {
  const path = ACCOUNT_PAGE_PATHS[page];
  return hash === undefined ? path : path.replace(':hash', encodeURIComponent(hash));
}

function reply(step: AccountPageStep, action: string): Reply {
  return {
    status: step.outcome === 'form' ? step.status : 200,
    contentType: HTML,
    text: accountPage(step, action),
    headers: pageHeaders(),
  };
}

const TITLES: Readonly<Record<AccountPage, string>> = {
  register: 'register an account',
  'request-reset': 'ask for a password reset link',
  reset: 'set a new password through a reset link',
  activate: 'activate an account through its activation link',
  'change-identity': 'confirm a change of address through its link',
};

function pageRoutes(page: AccountPage): AnyRoute[] {
  const path = ACCOUNT_PAGE_PATHS[page];
  const linkPage = path.includes(':hash');
  const linkRefused: Record<number, ResponseSpec> = linkPage
    ? { 404: pageResponse('The link is invalid, has expired or was already used') }
    : {};
  const addressTaken: Record<number, ResponseSpec> =
    page === 'register' || page === 'change-identity'
      ? { 409: pageResponse('The form again: the address already has an account') }
      : {};
  return [
    defineRoute({
      method: 'GET',
      path,
      name: `account::${page}-page`,
      summary: `The page to ${TITLES[page]}, for a browser (Accept preferring text/html)`,
      tags: ['account'],
      permission: 'public',
      query: ReturnQuery,
      checkedBy: 'handler',
      forBrowsers: true,
      errors: 'page',
      responses: {
        200: pageResponse('The form'),
        ...linkRefused,
        500: FAILURE_PAGES[500],
        503: FAILURE_PAGES[503],
      },
      handler: async ({ params, query }, { accountForms }) =>
        reply(
          await accountForms.show(page, params.hash ?? null, signInReturnPath(query.get('return'))),
          actionOf(page, params.hash),
        ),
    }),
    defineRoute({
      method: 'POST',
      path,
      name: `account::${page}-form`,
      summary: `The form of the page to ${TITLES[page]}: the page again, or what was done`,
      tags: ['account'],
      permission: 'public',
      body: formBody(page),
      bodyMediaTypes: ['application/x-www-form-urlencoded'],
      forBrowsers: true,
      errors: 'page',
      responses: {
        200: pageResponse(
          'Done: what the flow did, and the way back to the sign-in when the person came from one',
        ),
        400: pageResponse(
          "The form again, with the flow's refusals beside their fields; or a page saying the form expired or was used",
        ),
        403: pageResponse('The form was posted from another site'),
        ...linkRefused,
        ...addressTaken,
        ...FAILURE_PAGES,
      },
      handler: async ({ params, body, req }, { accountForms }) =>
        reply(
          await accountForms.submit({
            page,
            hash: params.hash ?? null,
            fields: body as Record<string, string | undefined>,
            sentFrom: { origin: req.headers.origin, fetchSite: headerValue(req.headers['sec-fetch-site']) },
          }),
          actionOf(page, params.hash),
        ),
    }),
  ];
}

export const accountPageRoutes: readonly AnyRoute[] = (
  Object.keys(ACCOUNT_PAGE_PATHS) as AccountPage[]
).flatMap(pageRoutes);
