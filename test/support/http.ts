/** Small helpers for talking to a test server the way a client would. */

export const ADMIN_CLIENT = { client_id: 'admin', client_secret: 'admin-client-secret' };
export const FRONTEND_CLIENT = { client_id: 'frontend', client_secret: 'frontend-client-secret' };
export const SEEDED_ADMIN = { username: 'admin', password: 'admin-password-change-me' };
export const SEEDED_USER = { username: 'user@example.com', password: 'user-password-change-me' };

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export async function request(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    json?: unknown;
    form?: Record<string, string>;
    raw?: string | Uint8Array<ArrayBuffer>;
    headers?: Record<string, string>;
    token?: string;
  } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  let body: string | Uint8Array<ArrayBuffer> | undefined;
  if (options.json !== undefined) {
    headers['Content-Type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form) {
    headers['Content-Type'] ??= 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.raw !== undefined) {
    body = options.raw;
  }
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  if (text) {
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: string;
}

/** The seeded user's password grant request through the frontend client, with any changes. */
export function passwordRequest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER, ...overrides };
}

export async function passwordGrant(
  baseUrl: string,
  client: { client_id: string; client_secret: string },
  account: { username: string; password: string },
): Promise<Tokens> {
  const response = await request(baseUrl, 'POST', '/security/generate-token', {
    json: { grant_type: 'password', scope: 'api', ...client, ...account },
  });
  if (response.status !== 200)
    throw new Error(`password grant failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as unknown as Tokens;
}

export async function refreshGrant(
  baseUrl: string,
  client: { client_id: string; client_secret: string },
  refreshToken: string,
): Promise<JsonResponse> {
  return request(baseUrl, 'POST', '/security/refresh-token', {
    json: { grant_type: 'refresh_token', scope: 'api', refresh_token: refreshToken, ...client },
  });
}

export function decodeJwtPart(token: string, index: 0 | 1): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[index] ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}
