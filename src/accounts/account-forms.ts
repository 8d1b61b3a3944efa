import { Conflict, Forbidden, Problem, ValidationFailed } from '../errors.ts';
import { isCrossSitePost, type SentFrom } from '../form-posts.ts';
import { digestOneTimeSecret } from '../one-time-secrets.ts';
import type { AccountFlows } from './account-flows.ts';
import type { Account, OneTimeTokenPurpose } from './model.ts';

/**
 * The account pages' forms (docs/api.md, "Pages for people"): each is a form over the account
 * flow its API route calls, with the same checks and the same errors, which the page shows
 * next to their fields. A form carries a sealed one-time value naming the page (and the link
 * it was shown for), as the sign-in form does, and is taken only from the service's own origin.
 */

export type AccountPage = 'register' | 'request-reset' | 'reset' | 'activate' | 'change-identity';

/** The pages a mailed link opens, and the kind of link each takes. */
const LINK_PAGES = {
  activate: 'activation',
  reset: 'reset',
  'change-identity': 'identity-change',
} as const satisfies Partial<Record<AccountPage, OneTimeTokenPurpose>>;

type LinkPage = keyof typeof LINK_PAGES;

/** What a form's one-time value seals: the page, the link it acts on, where the person goes back to. */
export interface AccountFormSeal {
  page: AccountPage;
  /** The digest of the link's hash, for a link page. */
  link: string | null;
  /** A same-origin path back to the sign-in the person came from, checked by the HTTP layer. */
  returnTo: string | null;
}

/** What the page shows: the form, with what a refused post said about it. */
export interface AccountForm {
  page: AccountPage;
  csrfToken: string;
  returnTo: string | null;
  /** What was typed in the fields that are shown again (never a password). */
  values: Readonly<Record<string, string>>;
  /** The refusals of the flow, by field. */
  errors: Readonly<Record<string, readonly string[]>>;
  /** A refusal that concerns the whole form. */
  error?: string;
}

export type AccountPageStep =
  | { outcome: 'form'; status: number; form: AccountForm }
  /** The flow did what it does; `account` is the one it acted on, when it names one. */
  | { outcome: 'done'; page: AccountPage; returnTo: string | null; account?: Account };

export interface AccountFormPost {
  page: AccountPage;
  /** The link's hash, from the path of a link page. */
  hash: string | null;
  fields: Readonly<Record<string, string | undefined>>;
  sentFrom: SentFrom;
}

/**
 * What the pages need of a sealer, declared here so that the accounts domain does not reach up
 * into the OAuth domain, whose sign-in form seals its values the same way (`createSealer`).
 */
export interface FormSealer<T extends object> {
  seal(value: T): string;
  /** The value of an authentic seal that has not expired, with its id; null for anything else. */
  open(value: string): Promise<(T & { id: string; expiresAt: number }) | null>;
}

/** Fields whose text the form shows again after a refusal; passwords never are. */
const KEPT_FIELDS = ['identity', 'email', 'firstName', 'lastName'];

export type AccountForms = ReturnType<typeof createAccountForms>;

export function createAccountForms(deps: {
  flows: Pick<
    AccountFlows,
    'register' | 'requestPasswordReset' | 'resetPassword' | 'activate' | 'confirmIdentityChange' | 'checkLink'
  >;
  sealer: FormSealer<AccountFormSeal>;
  /** Remembers a used one-time value until it expires: true the first time only. */
  usedValues: { useOnce(id: string, expiresAt: number): Promise<boolean> };
  /** APP_URL: the origin the pages are served at, the only one their forms are taken from. */
  appUrl: string;
}) {
  const { flows, sealer, usedValues } = deps;
  const ownOrigin = new URL(deps.appUrl).origin;

  function form(
    seal: AccountFormSeal,
    refused?: {
      status: number;
      fields: AccountFormPost['fields'];
      errors?: AccountForm['errors'];
      error?: string;
    },
  ): AccountPageStep {
    const values = Object.fromEntries(
      KEPT_FIELDS.flatMap((name) => {
        const value = refused?.fields[name];
        return value === undefined ? [] : [[name, value]];
      }),
    );
    return {
      outcome: 'form',
      status: refused?.status ?? 200,
      form: {
        page: seal.page,
        csrfToken: sealer.seal(seal),
        returnTo: seal.returnTo,
        values,
        errors: refused?.errors ?? {},
        ...(refused?.error === undefined ? {} : { error: refused.error }),
      },
    };
  }

  /** Runs the page's flow with the posted fields, as its API route would with a JSON body. */
  async function run(page: AccountPage, hash: string, fields: AccountFormPost['fields']) {
    const text = (name: string) => fields[name] ?? '';
    const optional = (name: string) => (fields[name] ? { [name]: fields[name] } : {});
    switch (page) {
      case 'register':
        return flows.register({
          identity: text('identity'),
          password: text('password'),
          passwordConfirm: text('passwordConfirm'),
          ...optional('firstName'),
          ...optional('lastName'),
        });
      case 'request-reset':
        await flows.requestPasswordReset(text('email'));
        return undefined;
      case 'reset':
        await flows.resetPassword(hash, {
          password: text('password'),
          passwordConfirm: text('passwordConfirm'),
        });
        return undefined;
      case 'activate':
        return flows.activate(hash, text('password'));
      case 'change-identity':
        return flows.confirmIdentityChange(hash, { currentPassword: text('currentPassword') });
    }
  }

  return {
    /**
     * The form of a page. A link page first checks its link (404 when it is unknown, used or
     * expired), so nobody types a password into a form that cannot work.
     */
    async show(page: AccountPage, hash: string | null, returnTo: string | null): Promise<AccountPageStep> {
      if (isLinkPage(page)) await flows.checkLink(LINK_PAGES[page], hash ?? '');
      return form({ page, link: hash === null ? null : digestOneTimeSecret(hash), returnTo });
    },

    /**
     * A post of a page's form: refused when it comes from another site, or its one-time value
     * is not one this page handed out for this link, has expired or was used; then the value is
     * used up and the flow runs. What the flow refuses about the fields comes back as the form
     * again, with a new value; a link that is no good is a page of its own (404).
     */
    async submit(post: AccountFormPost): Promise<AccountPageStep> {
      if (isCrossSitePost(post.sentFrom, ownOrigin))
        throw new Forbidden(
          'This form was sent from another site. Open the page again and send it from there.',
        );
      const sealed = await sealer.open(post.fields.csrf_token ?? '');
      const link = post.hash === null ? null : digestOneTimeSecret(post.hash);
      if (sealed?.page !== post.page || sealed.link !== link) throw new StaleAccountForm();
      const { id, expiresAt, ...seal } = sealed;
      if (!(await usedValues.useOnce(id, expiresAt))) throw new StaleAccountForm();
      try {
        const account = await run(post.page, post.hash ?? '', post.fields);
        return {
          outcome: 'done',
          page: post.page,
          returnTo: seal.returnTo,
          ...(account === undefined ? {} : { account }),
        };
      } catch (error) {
        if (error instanceof ValidationFailed)
          return form(seal, { status: 400, fields: post.fields, errors: fieldErrors(error) });
        // A taken address: beside the field where one was typed, about the form otherwise.
        if (error instanceof Conflict)
          return post.page === 'register'
            ? form(seal, { status: 409, fields: post.fields, errors: { identity: [error.detail] } })
            : form(seal, { status: 409, fields: post.fields, error: error.detail });
        throw error;
      }
    },
  };
}

function isLinkPage(page: AccountPage): page is LinkPage {
  return page in LINK_PAGES;
}

function fieldErrors(error: Problem): AccountForm['errors'] {
  return (error.extensions.errors ?? {}) as AccountForm['errors'];
}

/** A form value that is not one the service sealed for this page, has expired, or was posted before. */
class StaleAccountForm extends Problem {
  constructor() {
    super(400, 'This form has expired or was already sent. Open the page again and fill it in once more.');
  }
}
