import type { AccountKind } from '../accounts/model.ts';
import type { Sessions } from '../accounts/sessions.ts';
import {
  Forbidden,
  InvalidAuthorizationRequest,
  InvalidRequest,
  Problem,
  UnauthorizedClient,
  UnsupportedResponseType,
} from '../errors.ts';
import { isCrossSitePost, type SentFrom } from '../form-posts.ts';
import { createAppUrlMismatchReport } from './app-url-mismatch.ts';
import type { AuthorizationCodeService } from './authorization-code.ts';
import type { ClientStore, CodeFlowStore, OAuthClient, ScopeStore } from './model.ts';
import { CODE_CHALLENGE } from './pkce.ts';
import { isRegisteredRedirectUri, redirectDestination, withResponseParameters } from './redirect-uri.ts';
import { resolveScope } from './scope.ts';
import type { AuthorizationRequest, RequestSealer } from './sealed-request.ts';

/**
 * The longest `state` and `scope` the endpoint takes. Everything it seals into the sign-in
 * form is bounded so that the largest request it accepts still fits the seal
 * (MAX_SEALED_LENGTH, 16,000 base64url characters, i.e. 12,000 bytes of JSON): in JSON, at
 * worst, the client name takes 2 × 64 bytes, the redirect URI 2 × 2,000 (its `\` escaped),
 * the scope 2 × 1,000, the state 2 × 2,048 (a visible ASCII character is one byte, `"` and `\`
 * two), the challenge, id, expiry and member names under 200: about 10,400 bytes. A request
 * that would not fit is refused before any form is shown, never after the password.
 */
export const MAX_STATE_LENGTH = 2048;
export const MAX_SCOPE_LENGTH = 1000;

/** RFC 6749 Appendix A.5: `state` is 1*VSCHAR, visible ASCII and the space. */
const STATE = new RegExp(`^[\\x20-\\x7e]{1,${MAX_STATE_LENGTH}}$`);

/**
 * The authorization endpoint (RFC 6749 §4.1.1, §4.1.2) for first-party apps: it checks the
 * request, asks for the password on a sign-in form, and sends the browser back to the app
 * with a code. There is no consent step (every client is registered by a superuser) and no
 * sign-in session: each authorization asks for the password again.
 */

/** What the sign-in page shows, and the one-time value its form sends back. */
export interface SignInForm {
  /**
   * The anti-CSRF value: the authorization request the service checked, sealed, usable once.
   * A form posted without one that is current signs nobody in.
   */
  csrfToken: string;
  clientName: string;
  /** Which account store signs in: users by their email address, administrators by name. */
  accountKind: AccountKind;
  /**
   * Where the browser goes after the sign-in, which the page's CSP must let the form reach:
   * the redirect URI's origin, or a mobile app's private-use scheme (`com.example.app:`).
   */
  redirectOrigin: string;
  /**
   * The query of `GET /security/authorize` that starts this sign-in again: where a person who
   * leaves it (to reset a password, to register) comes back to.
   */
  authorizationQuery: string;
  /** After a refused attempt: why, and the name that was typed. */
  error?: string;
  username?: string;
}

export type AuthorizationStep =
  | { outcome: 'sign-in'; form: SignInForm }
  /** 303 to this URI: the app's redirect URI with `code` or `error`, `state` and `iss`. */
  | { outcome: 'redirect'; location: string };

export interface SignInAttempt {
  csrfToken: string;
  username: string;
  password: string;
  sentFrom: SentFrom;
}

export type AuthorizationEndpoint = ReturnType<typeof createAuthorizationEndpoint>;

export function createAuthorizationEndpoint(deps: {
  clients: ClientStore;
  scopes: ScopeStore;
  sessions: Pick<Sessions, 'start'>;
  sealer: RequestSealer;
  store: Pick<CodeFlowStore, 'useOnce'>;
  codes: Pick<AuthorizationCodeService, 'issueCode'>;
  /** RFC 9207: `iss` of every authorization response. */
  issuer: string;
  /** The process log: what the operator must hear about the deployment. */
  log?: (message: string) => void;
}) {
  const { clients, scopes, sessions, sealer, store, codes, issuer } = deps;
  /** The origin of APP_URL, where the sign-in page is served. */
  const ownOrigin = new URL(issuer).origin;
  const reportAppUrlMismatch = createAppUrlMismatchReport(ownOrigin, deps.log ?? (() => undefined));

  /** The form that continues the request, with a new one-time value. */
  function signInForm(
    client: OAuthClient,
    request: AuthorizationRequest,
    refused?: { error: string; username: string },
  ): AuthorizationStep {
    const form: SignInForm = {
      csrfToken: sealer.seal(request),
      clientName: client.name,
      accountKind: client.accountKind,
      redirectOrigin: redirectDestination(request.redirectUri),
      authorizationQuery: new URLSearchParams({
        response_type: 'code',
        client_id: request.clientName,
        redirect_uri: request.redirectUri,
        scope: request.scope,
        ...(request.state === null ? {} : { state: request.state }),
        code_challenge: request.codeChallenge,
        code_challenge_method: 'S256',
      }).toString(),
      ...refused,
    };
    return { outcome: 'sign-in', form };
  }

  function redirect(redirectUri: string, parameters: Record<string, string | null>): AuthorizationStep {
    return {
      outcome: 'redirect',
      location: withResponseParameters(redirectUri, { ...parameters, iss: issuer }),
    };
  }

  return {
    /**
     * `GET /security/authorize`. The client and the redirect URI are checked first: until
     * both are known good, a refusal is told on the page and nobody is redirected (§4.1.2.1).
     * Every later refusal goes back to the app as an error response.
     */
    async begin(query: URLSearchParams): Promise<AuthorizationStep> {
      const client = await clients.findByName(once(query, 'client_id') ?? '');
      if (!client) throw new InvalidAuthorizationRequest('The application (client_id) is not registered');
      const redirectUri = once(query, 'redirect_uri');
      if (redirectUri === null || !isRegisteredRedirectUri(redirectUri, client))
        throw new InvalidAuthorizationRequest(
          'The redirect_uri is not registered for this application, so the sign-in cannot send you back to it',
        );
      const state = once(query, 'state');
      let checked: { scope: string; codeChallenge: string };
      try {
        checked = await checkRequest(client, query);
      } catch (error) {
        if (!(error instanceof Problem) || error.oauthError === undefined) throw error;
        // A state the endpoint refuses is not handed back: it could be anything, of any length.
        const returned = state !== null && STATE.test(state) ? state : null;
        return redirect(redirectUri, {
          error: error.oauthError,
          error_description: error.detail,
          state: returned,
        });
      }
      return signInForm(client, { clientName: client.name, redirectUri, state, ...checked });
    },

    /**
     * `POST /security/authorize`. The password is checked as the password grant checks it
     * (same store, same message, same time for unknown accounts); a refusal shows the form
     * again with a new value, for the same request.
     *
     * The form's one-time value is used up by every post whose password was checked, right or
     * wrong, and by nothing before: the claim is the last step that can fail, after every read
     * and after the code is saved, so a post refused earlier, or cut short by an outage (503),
     * can be sent again. (A code saved for a post whose claim then loses is never handed out.)
     */
    async signIn(attempt: SignInAttempt): Promise<AuthorizationStep> {
      if (isCrossSitePost(attempt.sentFrom, ownOrigin)) {
        reportAppUrlMismatch(attempt.sentFrom);
        throw new Forbidden(
          'This sign-in form was sent from another site. Go back to the application and sign in again.',
        );
      }
      const sealed = await sealer.open(attempt.csrfToken);
      if (!sealed) throw new StaleSignInForm();
      const { id, expiresAt, ...request } = sealed;
      // The client may have been changed or deleted while the form was open.
      const client = await clients.findByName(request.clientName);
      if (
        !client?.grants.includes('authorization_code') ||
        !isRegisteredRedirectUri(request.redirectUri, client)
      )
        throw new InvalidAuthorizationRequest('The application no longer accepts this sign-in');
      const session = await sessions.start(client.accountKind, attempt.username, attempt.password);
      const code =
        session &&
        (await codes.issueCode({
          clientId: client.id,
          redirectUri: request.redirectUri,
          codeChallenge: request.codeChallenge,
          accountKind: client.accountKind,
          subject: session.account.id,
          scope: request.scope,
          credentialStamp: session.credentialStamp,
        }));
      if (!(await store.useOnce(id, expiresAt))) throw new StaleSignInForm();
      if (!code)
        return signInForm(client, request, { error: 'Invalid credentials', username: attempt.username });
      return redirect(request.redirectUri, { code, state: request.state });
    },
  };

  /** The checks after the client and the redirect URI, in the order RFC 6749 §4.1.2.1 lists the errors. */
  async function checkRequest(
    client: OAuthClient,
    query: URLSearchParams,
  ): Promise<{ scope: string; codeChallenge: string }> {
    // §3.1: no parameter may be repeated.
    for (const name of new Set(query.keys()))
      if (query.getAll(name).length > 1) throw new InvalidRequest(`Parameter ${name} must not be repeated`);
    const state = once(query, 'state');
    if (state !== null && !STATE.test(state))
      throw new InvalidRequest(
        `state must be at most ${MAX_STATE_LENGTH} visible ASCII characters (RFC 6749 Appendix A.5)`,
      );
    if ((once(query, 'scope') ?? '').length > MAX_SCOPE_LENGTH)
      throw new InvalidRequest(`scope must be at most ${MAX_SCOPE_LENGTH} characters`);
    const responseType = once(query, 'response_type');
    if (responseType === null) throw new InvalidRequest('Missing parameter: response_type');
    if (responseType !== 'code') throw new UnsupportedResponseType();
    if (!client.grants.includes('authorization_code'))
      throw new UnauthorizedClient('The client may not use the authorization code grant');
    if (once(query, 'code_challenge_method') !== 'S256')
      throw new InvalidRequest('PKCE is required: code_challenge with code_challenge_method=S256');
    const codeChallenge = once(query, 'code_challenge') ?? '';
    if (!CODE_CHALLENGE.test(codeChallenge))
      throw new InvalidRequest('code_challenge must be the 43-character BASE64URL(SHA256(code_verifier))');
    const scope = await resolveScope(once(query, 'scope') ?? '', scopes);
    return { scope, codeChallenge };
  }
}

/** A form value that is not one the service sealed, has expired, or was posted before. */
class StaleSignInForm extends InvalidAuthorizationRequest {
  constructor() {
    super('This sign-in form has expired or was already used. Go back to the application and sign in again.');
  }
}

/** A parameter's value; a repeated one counts as absent, and so does an empty one (§3.1). */
function once(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  return values.length === 1 && values[0] ? values[0] : null;
}
