import type { SignInForm } from '../../oauth/authorization-endpoint.ts';
import { REGISTER_PATH, REQUEST_RESET_PATH } from './account.ts';
import { escapeHtml, layout } from './page.ts';

export const AUTHORIZE_PATH = '/security/authorize';

/**
 * The longest `return` the account pages take. Node refuses a request line over 16 KiB
 * (431), so a longer one never arrives; the bound keeps the check's cost fixed.
 */
const MAX_RETURN_LENGTH = 14_000;
/** A path and query of visible ASCII, without `\` (which some browsers read as `/`). */
const RETURN_CHARACTERS = /^[\x21-\x5b\x5d-\x7e]*$/;

/**
 * The `return` of an account page, when it is a path back to the sign-in on this origin:
 * `/security/authorize?…` and nothing else, so that the page's "Back to sign-in" link can
 * never send anyone to another site or another page (no open redirect). Null otherwise.
 */
export function signInReturnPath(value: string | null): string | null {
  if (value === null || value.length > MAX_RETURN_LENGTH || !value.startsWith(`${AUTHORIZE_PATH}?`))
    return null;
  if (!RETURN_CHARACTERS.test(value)) return null;
  const base = 'http://origin.invalid';
  const parsed = new URL(value, base);
  return parsed.origin === base &&
    parsed.pathname === AUTHORIZE_PATH &&
    `${parsed.pathname}${parsed.search}` === value
    ? value
    : null;
}

/** An account page's path with the way back to the sign-in of this form. */
function accountPageLink(path: string, form: SignInForm): string {
  const back = `${AUTHORIZE_PATH}?${form.authorizationQuery}`;
  return `${path}?${new URLSearchParams({ return: back })}`;
}

/**
 * The sign-in form: the client's name, where the browser goes afterwards, the fields in the
 * order they are filled in, and after a refusal the reason, announced to screen readers and
 * tied to the form, with the name already typed and the focus on the password.
 */
export function signInPage(form: SignInForm): string {
  const client = escapeHtml(form.clientName);
  const refused = form.error !== undefined;
  const identity =
    form.accountKind === 'user'
      ? { label: 'Email address', type: 'email' }
      : { label: 'Administrator name', type: 'text' };
  const value = form.username === undefined ? '' : ` value="${escapeHtml(form.username)}"`;
  return layout(
    `Sign in to ${form.clientName}`,
    `<h1>Sign in to ${client}</h1>
<p>You will return to <strong>${escapeHtml(form.redirectOrigin)}</strong> afterwards.</p>
${refused ? `<p class="error" id="sign-in-error" role="alert">${escapeHtml(form.error ?? '')}</p>\n` : ''}<form method="post" action="${AUTHORIZE_PATH}"${refused ? ' aria-describedby="sign-in-error"' : ''}>
<input type="hidden" name="csrf_token" value="${escapeHtml(form.csrfToken)}">
<label for="username">${identity.label}</label>
<input id="username" name="username" type="${identity.type}" autocomplete="username" required maxlength="320"${value}${refused ? '' : ' autofocus'}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${refused ? ' autofocus' : ''}>
<button type="submit">Sign in</button>
</form>${form.accountKind === 'user' ? accountLinks(form) : ''}`,
  );
}

/** For a person who forgot the password or has no account yet: pages that come back here. */
function accountLinks(form: SignInForm): string {
  return `
<nav>
<a href="${escapeHtml(accountPageLink(REQUEST_RESET_PATH, form))}">Forgot your password?</a>
<a href="${escapeHtml(accountPageLink(REGISTER_PATH, form))}">Create an account</a>
</nav>`;
}
