/** The authorization code flow, driven as a browser and an app drive it, with fetch. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { MAX_SCOPE_LENGTH, MAX_STATE_LENGTH } from '../../src/oauth/authorization-endpoint.ts';
import { MAX_CLIENT_NAME_LENGTH } from '../../src/oauth/client-schemas.ts';
import { MAX_REDIRECT_URI_LENGTH } from '../../src/oauth/redirect-uri.ts';
import { adminLogin } from '../accounts/fixtures.ts';
import { request, SEEDED_ADMIN } from './http.ts';
import type { TestServer } from './server.ts';

export const SPA_REDIRECT = 'https://app.example.test/callback';

/** RFC 7636: a fresh verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A superuser's access token: the seeded superuser's. */
export async function superuserToken(baseUrl: string): Promise<string> {
  return (await adminLogin(baseUrl, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
}

export interface RegisteredClient {
  name: string;
  /** A confidential client's secret, from the creation answer. */
  secret?: string;
}

/** Registers a client through the API, as a superuser does. */
export async function registerClient(
  baseUrl: string,
  token: string,
  client: {
    name: string;
    type: 'public' | 'confidential';
    redirectUris?: string[];
    grants?: string[];
    accounts?: string;
  },
): Promise<RegisteredClient> {
  const response = await request(baseUrl, 'POST', '/oauth-clients', {
    token,
    json: {
      grants: ['authorization_code', 'refresh_token'],
      accounts: 'user',
      redirectUris: [SPA_REDIRECT],
      ...client,
    },
  });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  const secret = response.body.secret;
  return { name: client.name, ...(typeof secret === 'string' ? { secret } : {}) };
}

/** The query of an authorization request, valid unless overridden (a null leaves a parameter out). */
export function authorizationQuery(
  clientId: string,
  challenge: string,
  overrides: Record<string, string | null> = {},
): string {
  const parameters: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: SPA_REDIRECT,
    scope: 'api',
    state: 'state-of-the-app',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  };
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== null) query.append(name, value);
  return query.toString();
}

export interface PageAnswer {
  status: number;
  headers: Headers;
  html: string;
  location: string | null;
}

async function answer(response: Response): Promise<PageAnswer> {
  return {
    status: response.status,
    headers: response.headers,
    html: await response.text(),
    location: response.headers.get('location'),
  };
}

export async function openAuthorization(baseUrl: string, query: string): Promise<PageAnswer> {
  return answer(await fetch(`${baseUrl}/security/authorize?${query}`, { redirect: 'manual' }));
}

/** The one-time value of the sign-in form on a page. */
export function csrfTokenOf(html: string): string {
  const match = /name="csrf_token" value="([^"]+)"/.exec(html);
  assert.ok(match?.[1], 'the page has a sign-in form');
  return match[1];
}

/** Posts the sign-in form; `headers` as a browser would add them (`Origin`, `Sec-Fetch-Site`). */
export async function postSignIn(
  baseUrl: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<PageAnswer> {
  return answer(
    await fetch(`${baseUrl}/security/authorize`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    }),
  );
}

/** The parameters of a redirect's Location. */
export function redirectParameters(location: string | null): URLSearchParams {
  assert.ok(location, 'a redirect');
  return new URL(location).searchParams;
}

/** Opens the page, signs in, and returns the code the redirect carries. */
export async function authorizationCode(
  baseUrl: string,
  clientId: string,
  challenge: string,
  credentials: { username: string; password: string },
  overrides: Record<string, string | null> = {},
): Promise<string> {
  const page = await openAuthorization(baseUrl, authorizationQuery(clientId, challenge, overrides));
  assert.equal(page.status, 200, page.html);
  const signedIn = await postSignIn(baseUrl, { csrf_token: csrfTokenOf(page.html), ...credentials });
  assert.equal(signedIn.status, 303, signedIn.html);
  const code = redirectParameters(signedIn.location).get('code');
  assert.ok(code);
  return code;
}

/** The token request of the authorization code grant. */
export function exchangeCode(
  baseUrl: string,
  parameters: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return request(baseUrl, 'POST', '/security/generate-token', {
    form: { grant_type: 'authorization_code', redirect_uri: SPA_REDIRECT, ...parameters },
    headers,
  });
}

/** The parameters of the largest authorization request the endpoint accepts. */
export interface LargestRequest {
  clientName: string;
  redirectUri: string;
  scope: string;
  /** `"` and `\`, the characters JSON escapes, as many as a state may hold. */
  state: string;
}

/**
 * Registers what the largest authorization request needs: a public client with the longest
 * name, registered with the longest redirect URI (its query all `\`, which JSON escapes) and
 * SPA_REDIRECT, and scopes whose names fill the scope parameter to its bound.
 */
export async function registerLargestRequest(server: TestServer, superuser: string): Promise<LargestRequest> {
  const base = 'https://app.example.test/cb?';
  const clientName = `x${randomBytes(8).toString('hex')}`.padEnd(MAX_CLIENT_NAME_LENGTH, 'x');
  const redirectUri = base + '\\'.repeat(MAX_REDIRECT_URI_LENGTH - base.length);
  await registerClient(server.url, superuser, {
    name: clientName,
    type: 'public',
    redirectUris: [redirectUri, SPA_REDIRECT],
  });
  const names = Array.from({ length: 10 }, (_, index) => `scope-${index}-`.padEnd(99, 's'));
  names.push('t'.repeat(MAX_SCOPE_LENGTH - names.join(' ').length - 1));
  for (const name of names) await server.app.stores.scopes.createIfAbsent({ name, description: name });
  const scope = names.join(' ');
  assert.equal(scope.length, MAX_SCOPE_LENGTH);
  return { clientName, redirectUri, scope, state: '"\\'.repeat(MAX_STATE_LENGTH / 2) };
}
