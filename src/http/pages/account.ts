import type { AccountForm, AccountPage, AccountPageStep } from '../../accounts/account-forms.ts';
import { NAME_MAX_LENGTH } from '../../accounts/schemas.ts';
import { escapeHtml, layout } from './page.ts';

/**
 * The account pages (docs/api.md, "Pages for people"): a form per account flow, with the
 * flow's refusals beside the fields they concern, and what the flow did once it is done.
 */

export const REGISTER_PATH = '/account/register';
export const REQUEST_RESET_PATH = '/account/reset-password';

/** The paths of the pages, with `:hash` for those a mailed link opens. */
export const ACCOUNT_PAGE_PATHS: Readonly<Record<AccountPage, string>> = {
  register: REGISTER_PATH,
  'request-reset': REQUEST_RESET_PATH,
  reset: '/account/reset-password/:hash',
  activate: '/account/activate/:hash',
  'change-identity': '/account/change-identity/:hash',
};

interface Field {
  name: string;
  label: string;
  type: 'email' | 'password' | 'text';
  autocomplete: string;
  required: boolean;
  maxlength: number;
}

const email = (name: string): Field => ({
  name,
  label: 'Email address',
  type: 'email',
  autocomplete: 'username',
  required: true,
  maxlength: 320,
});
const password = (name: string, label: string, autocomplete: string): Field => ({
  name,
  label,
  type: 'password',
  autocomplete,
  required: true,
  maxlength: 1024,
});
const personName = (name: string, label: string, autocomplete: string): Field => ({
  name,
  label: `${label} (optional)`,
  type: 'text',
  autocomplete,
  required: false,
  maxlength: NAME_MAX_LENGTH,
});

/** What each page says and asks for, and what it says once its flow is done. */
const PAGES: Readonly<
  Record<
    AccountPage,
    { title: string; intro: string; fields: readonly Field[]; submit: string; done: string }
  >
> = {
  register: {
    title: 'Create an account',
    intro: 'We will send a link to your email address; open it to activate the account.',
    fields: [
      email('identity'),
      password('password', 'Password', 'new-password'),
      password('passwordConfirm', 'Repeat the password', 'new-password'),
      personName('firstName', 'First name', 'given-name'),
      personName('lastName', 'Last name', 'family-name'),
    ],
    submit: 'Create the account',
    done: 'We sent an activation link to your email address. Open it to activate your account: it asks for the password you chose here.',
  },
  'request-reset': {
    title: 'Forgot your password?',
    intro: 'Enter the email address of your account; we will send a link to choose a new password.',
    fields: [email('email')],
    submit: 'Send the link',
    done: 'If the address belongs to an active account, a link to choose a new password has been sent to it. Open it to go on.',
  },
  reset: {
    title: 'Choose a new password',
    intro: 'Your new password ends every session of your account.',
    fields: [
      password('password', 'New password', 'new-password'),
      password('passwordConfirm', 'Repeat the new password', 'new-password'),
    ],
    submit: 'Set the password',
    done: 'Your password has been changed. Sign in with the new one.',
  },
  activate: {
    title: 'Activate your account',
    intro: 'Enter the password you chose when you registered.',
    fields: [password('password', 'Password', 'current-password')],
    submit: 'Activate',
    done: 'Your account is active. You can now sign in.',
  },
  'change-identity': {
    title: 'Confirm your new address',
    intro: 'Enter the password of your account to make this address the one you sign in with.',
    fields: [password('currentPassword', 'Password', 'current-password')],
    submit: 'Confirm the address',
    done: 'Your account now signs in with its new address.',
  },
};

/** The names of the fields a page's form posts, besides its one-time value. */
export function accountPageFields(page: AccountPage): string[] {
  return PAGES[page].fields.map(({ name }) => name);
}

/** The page of a step: the form, or what was done. `action` is the path the form posts to. */
export function accountPage(step: AccountPageStep, action: string): string {
  if (step.outcome === 'form') return formPage(step.form, action);
  const page = PAGES[step.page];
  const identity = step.account
    ? `\n<p>Your account: <strong>${escapeHtml(step.account.identity)}</strong></p>`
    : '';
  return layout(
    page.title,
    `<h1>${escapeHtml(page.title)}</h1>
<p role="status">${escapeHtml(page.done)}</p>${identity}${links(step.returnTo, [])}`,
  );
}

function formPage(form: AccountForm, action: string): string {
  const page = PAGES[form.page];
  const firstInvalid = page.fields.find(({ name }) => form.errors[name]?.length)?.name;
  const focus = firstInvalid ?? (form.error === undefined ? page.fields[0]?.name : undefined);
  const alert =
    form.error === undefined
      ? ''
      : `<p class="error" id="form-error" role="alert">${escapeHtml(form.error)}</p>\n`;
  const summary =
    firstInvalid === undefined
      ? ''
      : '<p class="error" id="form-error" role="alert">Some fields need another look; each says why below it.</p>\n';
  const fields = page.fields.map((field) => fieldMarkup(field, form, field.name === focus)).join('\n');
  const elsewhere: [string, string | null][] =
    form.page === 'register'
      ? [['Already have an account? Sign in', form.returnTo]]
      : form.page === 'request-reset'
        ? [['Back to sign-in', form.returnTo]]
        : [];
  return layout(
    page.title,
    `<h1>${escapeHtml(page.title)}</h1>
<p>${escapeHtml(page.intro)}</p>
${alert || summary}<form method="post" action="${escapeHtml(action)}"${alert || summary ? ' aria-describedby="form-error"' : ''}>
<input type="hidden" name="csrf_token" value="${escapeHtml(form.csrfToken)}">
${fields}
<button type="submit">${escapeHtml(page.submit)}</button>
</form>${links(null, elsewhere)}`,
  );
}

function fieldMarkup(field: Field, form: AccountForm, focus: boolean): string {
  const errors = form.errors[field.name] ?? [];
  const errorId = `${field.name}-error`;
  const value = field.type === 'password' ? undefined : form.values[field.name];
  const attributes = [
    `id="${field.name}"`,
    `name="${field.name}"`,
    `type="${field.type}"`,
    `autocomplete="${field.autocomplete}"`,
    `maxlength="${field.maxlength}"`,
    ...(field.required ? ['required'] : []),
    ...(value === undefined ? [] : [`value="${escapeHtml(value)}"`]),
    ...(errors.length > 0 ? ['aria-invalid="true"', `aria-describedby="${errorId}"`] : []),
    ...(focus ? ['autofocus'] : []),
  ];
  const message =
    errors.length > 0
      ? `\n<p class="error field-error" id="${errorId}">${errors.map(escapeHtml).join(' ')}</p>`
      : '';
  return `<label for="${field.name}">${escapeHtml(field.label)}</label>
<input ${attributes.join(' ')}>${message}`;
}

/** The way back to the sign-in the person came from, and other links, when there are any. */
function links(returnTo: string | null, others: readonly (readonly [string, string | null])[]): string {
  const shown = [...(returnTo === null ? [] : [['Back to sign-in', returnTo] as const]), ...others].filter(
    (link): link is readonly [string, string] => link[1] !== null,
  );
  if (shown.length === 0) return '';
  return `\n<nav>${shown.map(([text, href]) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`).join('\n')}</nav>`;
}
