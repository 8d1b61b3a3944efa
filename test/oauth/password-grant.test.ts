import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ADMIN_CLIENT,
  decodeJwtPart,
  passwordRequest,
  request,
  SEEDED_ADMIN,
  SEEDED_USER,
} from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';

describeBackendSkip();

for (const backend of backends()) {
  describe(`password grant (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    const generate = (body: unknown, headers?: Record<string, string>) =>
      request(server.url, 'POST', '/security/generate-token', { json: body, headers });

    test('issues a Bearer access token and a refresh token, not cacheable', async () => {
      const response = await generate(passwordRequest());
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('pragma'), 'no-cache');
      assert.equal(response.body.token_type, 'Bearer');
      assert.equal(response.body.expires_in, 86400);
      assert.equal(typeof response.body.access_token, 'string');
      // Family, generation, key id, 256 random bits, MAC.
      assert.match(String(response.body.refresh_token), /^[\w-]{22}\.0\.[\w-]{8}\.[\w-]{43}\.[\w-]{22}$/);
    });

    test('the access token is an RS256 at+jwt with the RFC 9068 claims', async () => {
      const { body } = await generate(passwordRequest());
      const token = String(body.access_token);
      const header = decodeJwtPart(token, 0);
      const claims = decodeJwtPart(token, 1);
      assert.equal(header.alg, 'RS256');
      assert.equal(header.typ, 'at+jwt');
      assert.equal(typeof header.kid, 'string');
      for (const claim of ['iss', 'sub', 'aud', 'client_id', 'scope', 'jti', 'iat', 'exp']) {
        assert.ok(claim in claims, `claim ${claim} is present`);
      }
      assert.equal(claims.client_id, 'frontend');
      assert.equal(claims.scope, 'api');
      assert.equal(claims.kind, 'user');
      assert.match(String(claims.client_rid), /^[0-9a-f]{8}-[0-9a-f]{4}-/, 'the registration of the client');
      assert.equal(Number(claims.exp) - Number(claims.iat), 86400);
    });

    test('the admin client logs in administrators, from the admin store', async () => {
      const response = await generate(passwordRequest({ ...ADMIN_CLIENT, ...SEEDED_ADMIN }));
      assert.equal(response.status, 200);
      assert.equal(decodeJwtPart(String(response.body.access_token), 1).kind, 'admin');
    });

    test('the stores are kept apart: the frontend client cannot log in an administrator', async () => {
      const response = await generate(passwordRequest({ ...SEEDED_ADMIN }));
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_grant');
      assert.equal(response.body.detail, 'Invalid credentials');
    });

    test('accepts a form-encoded body and HTTP Basic client authentication', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        form: { grant_type: 'password', scope: 'api', ...SEEDED_USER },
        headers: {
          Authorization: `Basic ${Buffer.from('frontend:frontend-client-secret').toString('base64')}`,
        },
      });
      assert.equal(response.status, 200);
      assert.equal(typeof response.body.access_token, 'string');
    });

    for (const [label, overrides] of [
      ['a wrong password', { password: 'wrong-password' }],
      ['an unknown username', { username: 'nobody@example.com' }],
    ] as const) {
      test(`${label} says Invalid credentials (invalid_grant, 400)`, async () => {
        const response = await generate(passwordRequest(overrides));
        assert.equal(response.status, 400);
        assert.equal(response.headers.get('content-type'), 'application/json');
        assert.equal(response.body.error, 'invalid_grant');
        assert.equal(response.body.detail, 'Invalid credentials');
        assert.equal(response.body.error_description, 'Invalid credentials');
      });
    }

    test('an inactive account says Invalid credentials', async () => {
      const account = await server.app.stores.users.findByIdentity(SEEDED_USER.username);
      assert.ok(account);
      await server.app.stores.users.update(account.id, { status: 'inactive' });
      try {
        const response = await generate(passwordRequest());
        assert.equal(response.status, 400);
        assert.equal(response.body.detail, 'Invalid credentials');
      } finally {
        await server.app.stores.users.update(account.id, { status: 'active' });
      }
    });

    test('a wrong client secret says Invalid credentials (invalid_client, 401)', async () => {
      const response = await generate(passwordRequest({ client_secret: 'wrong' }));
      assert.equal(response.status, 401);
      assert.equal(response.body.error, 'invalid_client');
      assert.equal(response.body.detail, 'Invalid credentials');
      assert.equal(response.headers.get('www-authenticate'), null);
    });

    test('a wrong client secret over HTTP Basic gets a Basic challenge', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        json: { grant_type: 'password', scope: 'api', ...SEEDED_USER },
        headers: { Authorization: `Basic ${Buffer.from('frontend:wrong').toString('base64')}` },
      });
      assert.equal(response.status, 401);
      assert.match(String(response.headers.get('www-authenticate')), /^Basic /);
    });

    test('HTTP Basic credentials that cannot be read, or an empty password, get a Basic challenge', async () => {
      const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;
      const headers = [
        basic('frontend'), // no colon
        basic('fr%ZZ:frontend-client-secret'), // not form-urlencoded
        basic('frontend:'), // a confidential client's empty password
        basic(':frontend-client-secret'), // no client id
        basic('nobody:'), // an unknown client's empty password
        'Basic',
        'Basic !!!', // not Base64
      ];
      for (const authorization of headers) {
        // Credentials in the body beside it do not count: the client tried Basic (RFC 6749 §5.2).
        const body =
          authorization === 'Basic !!!'
            ? passwordRequest()
            : { grant_type: 'password', scope: 'api', ...SEEDED_USER };
        const response = await request(server.url, 'POST', '/security/generate-token', {
          json: body,
          headers: { Authorization: authorization },
        });
        assert.equal(response.status, 401, `${authorization}: ${JSON.stringify(response.body)}`);
        assert.equal(response.body.error, 'invalid_client', authorization);
        assert.match(String(response.headers.get('www-authenticate')), /^Basic /, authorization);
      }
    });

    test('an empty Basic client id beside a client_id in the body is a failed Basic authentication', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        json: { grant_type: 'password', scope: 'api', client_id: 'frontend', ...SEEDED_USER },
        headers: { Authorization: `Basic ${Buffer.from(':frontend-client-secret').toString('base64')}` },
      });
      assert.equal(response.status, 401, JSON.stringify(response.body));
      assert.match(String(response.headers.get('www-authenticate')), /^Basic /);
    });

    test('an Authorization header of another scheme is no client authentication: the body is', async () => {
      for (const authorization of ['Bearer x', 'BasicX Zm9vOmJhcg==']) {
        const response = await request(server.url, 'POST', '/security/generate-token', {
          json: passwordRequest(),
          headers: { Authorization: authorization },
        });
        assert.equal(response.status, 200, `${authorization}: ${JSON.stringify(response.body)}`);
      }
    });

    test('an unknown client says Invalid credentials', async () => {
      const response = await generate(passwordRequest({ client_id: 'nobody' }));
      assert.equal(response.status, 401);
      assert.equal(response.body.detail, 'Invalid credentials');
    });

    test('client credentials in both HTTP Basic and the body are refused', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        json: passwordRequest(),
        headers: {
          Authorization: `Basic ${Buffer.from('frontend:frontend-client-secret').toString('base64')}`,
        },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_request');
    });

    test('a scope other than api says Invalid scope', async () => {
      const response = await generate(passwordRequest({ scope: 'admin' }));
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_scope');
      assert.equal(response.body.detail, 'Invalid scope');
    });

    test('a missing grant_type is invalid_request; an unknown one unsupported_grant_type', async () => {
      const { grant_type: _omitted, ...withoutGrant } = passwordRequest();
      const missing = await generate(withoutGrant);
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error, 'invalid_request');
      for (const grantType of ['implicit', 'token', 'magic']) {
        const unknown = await generate(passwordRequest({ grant_type: grantType }));
        assert.equal(unknown.status, 400);
        assert.equal(unknown.body.error, 'unsupported_grant_type', grantType);
      }
    });

    test('a client without the grant is unauthorized_client', async () => {
      const response = await generate(passwordRequest({ grant_type: 'authorization_code', code: 'x' }));
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'unauthorized_client');
    });

    for (const field of ['username', 'password', 'client_id', 'client_secret']) {
      test(`a missing ${field} is invalid_request`, async () => {
        const body: Record<string, unknown> = passwordRequest();
        delete body[field];
        const response = await generate(body);
        assert.equal(response.status, 400);
        assert.equal(response.body.error, 'invalid_request');
        assert.match(String(response.body.detail), new RegExp(field));
      });
    }

    test('a repeated form parameter is invalid_request (RFC 6749 §3.2)', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        raw: 'grant_type=password&grant_type=password&scope=api&client_id=frontend&client_secret=frontend-client-secret&username=user%40example.com&password=user-password-change-me',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_request');
    });
  });
}
