/**
 * CORS as a browser and a shared cache see it: which response headers script may read, and
 * which responses say that they depend on the request's Origin.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ALLOWED = 'https://app.example';
const EXPOSED = ['Location', 'WWW-Authenticate', 'Deprecation', 'Sunset', 'Link'];

/** One request of every kind the pipeline answers differently: served, refused, unmatched, preflight. */
const KINDS = [
  { name: 'a served GET', method: 'GET', path: '/', status: 200 },
  { name: 'a 401', method: 'GET', path: '/users/x', status: 401 },
  { name: 'a 404', method: 'GET', path: '/nowhere', status: 404 },
  { name: 'a 405', method: 'DELETE', path: '/', status: 405 },
  {
    name: 'a preflight',
    method: 'OPTIONS',
    path: '/security/generate-token',
    status: 204,
    headers: { 'Access-Control-Request-Method': 'POST' },
    preflight: true,
  },
  {
    name: 'an OPTIONS that is no preflight',
    method: 'OPTIONS',
    path: '/security/generate-token',
    status: 204,
  },
] as const;

function send(server: TestServer, kind: (typeof KINDS)[number], origin: string | undefined) {
  const headers: Record<string, string> = { ...('headers' in kind ? kind.headers : {}) };
  if (origin) headers.Origin = origin;
  return request(server.url, kind.method, kind.path, { headers });
}

function varyFields(headers: Headers): string[] {
  return (headers.get('vary') ?? '').split(',').map((field) => field.trim().toLowerCase());
}

function exposed(headers: Headers): string[] {
  const value = headers.get('access-control-expose-headers');
  return value ? value.split(',').map((name) => name.trim()) : [];
}

describe('CORS with a list of origins', () => {
  let server: TestServer;
  let configDir: string;
  before(async () => {
    configDir = await mkdtemp(join(tmpdir(), 'cors-'));
    const configFile = join(configDir, 'config.json');
    // A Vary of the operator's own must survive beside the one CORS adds.
    await writeFile(configFile, JSON.stringify({ responseHeaders: { '*': { Vary: 'Accept-Encoding' } } }));
    server = await startTestServer({ env: { CORS_ORIGINS: ALLOWED, CONFIG_FILE: configFile } });
  });
  after(async () => {
    await server.close();
    await rm(configDir, { recursive: true, force: true });
  });

  test('every response varies by Origin, whatever the Origin (or none), errors and preflights too', async () => {
    for (const kind of KINDS) {
      for (const origin of [ALLOWED, 'https://other.example', undefined]) {
        const response = await send(server, kind, origin);
        const label = `${kind.name} from ${origin ?? 'no origin'}`;
        assert.equal(response.status, kind.status, label);
        assert.deepEqual(varyFields(response.headers), ['accept-encoding', 'origin'], label);
        if (origin === ALLOWED) continue;
        for (const name of ['allow-origin', 'expose-headers', 'allow-methods', 'allow-headers', 'max-age']) {
          assert.equal(response.headers.get(`access-control-${name}`), null, `${label}: ${name}`);
        }
      }
    }
  });

  test('actual responses to an allowed origin expose the headers script needs; preflights do not', async () => {
    for (const kind of KINDS) {
      const response = await send(server, kind, ALLOWED);
      assert.equal(response.headers.get('access-control-allow-origin'), ALLOWED, kind.name);
      // Browsers take the exposed headers from the actual response only (Fetch, CORS-preflight fetch).
      assert.deepEqual(exposed(response.headers), 'preflight' in kind ? [] : EXPOSED, kind.name);
    }
    const created = await request(server.url, 'POST', '/account/register', {
      headers: { Origin: ALLOWED },
      json: {
        identity: 'cors@example.com',
        password: 'correct horse battery',
        passwordConfirm: 'correct horse battery',
        firstName: 'Cors',
      },
    });
    assert.equal(created.status, 201);
    assert.ok(created.headers.get('location'));
    assert.deepEqual(exposed(created.headers), EXPOSED);
  });
});

describe('CORS open to every origin', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { CORS_ORIGINS: '*' } });
  });
  after(() => server.close());

  test('every actual response allows any origin and exposes the same headers, so none varies by Origin', async () => {
    for (const kind of KINDS.filter((kind) => !('preflight' in kind))) {
      for (const origin of [ALLOWED, undefined]) {
        const response = await send(server, kind, origin);
        const label = `${kind.name} from ${origin ?? 'no origin'}`;
        assert.equal(response.headers.get('access-control-allow-origin'), '*', label);
        assert.deepEqual(exposed(response.headers), EXPOSED, label);
        assert.equal(response.headers.get('vary'), null, label);
      }
    }
  });
});

describe('CORS not configured', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('no response carries CORS headers or varies by Origin', async () => {
    for (const kind of KINDS) {
      const response = await send(server, kind, ALLOWED);
      assert.equal(response.headers.get('access-control-allow-origin'), null, kind.name);
      assert.equal(response.headers.get('access-control-expose-headers'), null, kind.name);
      assert.equal(response.headers.get('vary'), null, kind.name);
    }
  });
});

describe('the sign-in pages, for top-level navigation only', () => {
  const PAGE_REQUESTS = [
    { name: 'the page', method: 'GET', path: '/security/authorize?client_id=nobody' },
    { name: 'the form post', method: 'POST', path: '/security/authorize' },
    { name: 'a 405', method: 'DELETE', path: '/security/authorize' },
    {
      name: 'a preflight for a post',
      method: 'OPTIONS',
      path: '/security/authorize',
      headers: { 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
    },
  ] as const;

  for (const origins of [ALLOWED, '*']) {
    test(`answer no CORS headers, a preflight neither, with CORS_ORIGINS=${origins}`, async () => {
      const server = await startTestServer({ env: { CORS_ORIGINS: origins } });
      try {
        for (const page of PAGE_REQUESTS) {
          const response = await request(server.url, page.method, page.path, {
            headers: { Origin: ALLOWED, ...('headers' in page ? page.headers : {}) },
            ...(page.method === 'POST' ? { form: { csrf_token: 'x' } } : {}),
          });
          const cors = [...response.headers.keys()].filter((name) => name.startsWith('access-control-'));
          assert.deepEqual(cors, [], `${page.name}: ${cors.join(', ')}`);
        }
        const preflight = await request(server.url, 'OPTIONS', '/security/authorize', {
          headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'POST' },
        });
        assert.equal(preflight.status, 204);
        assert.equal(preflight.headers.get('allow'), 'GET, HEAD, POST');
        // The API beside them still answers the allowed origin.
        const api = await request(server.url, 'GET', '/', { headers: { Origin: ALLOWED } });
        assert.ok(api.headers.get('access-control-allow-origin'));
      } finally {
        await server.close();
      }
    });
  }
});
