import type { SignInForm } from '../../oauth/authorization-endpoint.ts';
import { escapeHtml, layout } from './page.ts';

export const AUTHORIZE_PATH = '/security/authorize';

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
</form>`,
  );
}
