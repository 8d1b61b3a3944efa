import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { jwtVerify, SignJWT } from 'jose';
import { thumbprint } from '../../src/oauth/key-ring-store.ts';
import { openKeyRingStore } from '../../src/services.ts';
import { decodeJwtPart, FRONTEND_CLIENT, passwordGrant, request, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access tokens on a protected route', () => {
  let server: TestServer;
  let token: string;
  let claims: Record<string, unknown>;
  before(async () => {
    server = await startTestServer();
    token = (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).access_token;
    claims = decodeJwtPart(token, 1);
  });
  after(() => server.close());

  const read = (bearer: string) => request(server.url, 'GET', `/users/${claims.sub}`, { token: bearer });

  function assertInvalidToken(response: Awaited<ReturnType<typeof read>>, detail?: RegExp) {
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.body.error, 'invalid_token');
    assert.match(String(response.headers.get('www-authenticate')), /^Bearer error="invalid_token"/);
    if (detail) assert.match(String(response.body.detail), detail);
    assert.ok(!JSON.stringify(response.body).includes('    at '), 'no stack trace');
  }

  test('a valid token reads the account', async () => {
    assert.equal((await read(token)).status, 200);
  });

  test('the token is the compact JWS of exactly the RFC 9068 header and claims, signed by the current key', async () => {
    const [current] = (await openKeyRingStore(server.keysDir).read()).signing;
    assert.deepEqual(decodeJwtPart(token, 0), { alg: 'RS256', typ: 'at+jwt', kid: current.kid });
    assert.deepEqual(Object.keys(claims), [
      'client_id',
      'client_rid',
      'scope',
      'kind',
      'cst',
      'iss',
      'aud',
      'sub',
      'jti',
      'iat',
      'exp',
    ]);
    const { payload } = await jwtVerify(token, current.publicKey, {
      algorithms: ['RS256'],
      typ: 'at+jwt',
      issuer: 'http://localhost:8080',
      audience: 'http://localhost:8080',
    });
    assert.deepEqual(payload, claims);
    assert.match(String(claims.jti), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(Math.abs(Number(claims.iat) - Date.now() / 1000) < 60);
  });

  test('a token signed with another key under our kid is refused', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: String(decodeJwtPart(token, 0).kid) })
      .sign(privateKey);
    assertInvalidToken(await read(forged), /signature/);
  });

  test('a token without a kid, or with one that is not ours, is refused', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    for (const header of [{}, { kid: thumbprint(publicKey) }, { kid: '../../etc/passwd' }]) {
      const foreign = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', ...header })
        .sign(privateKey);
      assertInvalidToken(await read(foreign), /signing key is not trusted/);
    }
  });

  test('alg none is refused', async () => {
    const unsigned = `${base64url({ alg: 'none', typ: 'at+jwt' })}.${base64url(claims)}.`;
    assertInvalidToken(await read(unsigned));
  });

  test('HS256 signed with the public key as the secret is refused', async () => {
    const [current] = (await openKeyRingStore(server.keysDir).read()).signing;
    const publicPem = current.publicKey.export({ type: 'spki', format: 'pem' });
    const input = `${base64url({ alg: 'HS256', typ: 'at+jwt', kid: current.kid })}.${base64url(claims)}`;
    const signature = createHmac('sha256', publicPem).update(input).digest('base64url');
    assertInvalidToken(await read(`${input}.${signature}`), /algorithm/);
  });

  test('a token with another typ is refused', async () => {
    const [current] = (await openKeyRingStore(server.keysDir).read()).signing;
    const jwt = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: current.kid })
      .sign(current.privateKey);
    assertInvalidToken(await read(jwt), /typ/);
  });

  test('a token of another issuer or for another audience is refused, even signed with our key', async () => {
    const [current] = (await openKeyRingStore(server.keysDir).read()).signing;
    for (const [claim, value] of [
      ['iss', 'https://elsewhere.example'],
      ['aud', 'https://elsewhere.example'],
    ] as const) {
      const jwt = await new SignJWT({ ...claims, [claim]: value })
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: current.kid })
        .sign(current.privateKey);
      assertInvalidToken(await read(jwt), new RegExp(`${claim} claim`));
    }
  });

  test('a tampered payload is refused, also with the genuine token verified and remembered', async () => {
    assert.equal((await read(token)).status, 200);
    const [header, , signature] = token.split('.');
    const tampered = `${header}.${base64url({ ...claims, sub: '00000000-0000-0000-0000-000000000000' })}.${signature}`;
    assertInvalidToken(await read(tampered), /signature/);
    assert.equal((await read(token)).status, 200, 'the genuine token still reads');
  });

  test('garbage and a non-Bearer scheme are refused', async () => {
    assertInvalidToken(await read('not-a-jwt'));
    const basic = await request(server.url, 'GET', `/users/${claims.sub}`, {
      headers: { Authorization: 'Basic Zm9vOmJhcg==' },
    });
    assert.equal(basic.status, 401);
  });

  test('a token of a deactivated account is refused at once', async () => {
    const id = String(claims.sub);
    await server.app.stores.users.update(id, { status: 'inactive' });
    try {
      assertInvalidToken(await read(token), /not active/);
    } finally {
      await server.app.stores.users.update(id, { status: 'active' });
    }
  });

  test('a token of a deleted account is refused at once', async () => {
    const other = await startTestServer();
    try {
      const otherToken = (await passwordGrant(other.url, FRONTEND_CLIENT, SEEDED_USER)).access_token;
      const sub = String(decodeJwtPart(otherToken, 1).sub);
      assert.equal(await other.app.stores.users.delete(sub), true);
      const response = await request(other.url, 'GET', `/users/${sub}`, { token: otherToken });
      assert.equal(response.status, 401);
      assert.equal(response.body.error, 'invalid_token');
    } finally {
      await other.close();
    }
  });
});

describe('access token lifetime', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { ACCESS_TOKEN_TTL: '1' } });
  });
  after(() => server.close());

  test('an expired token is refused with "Token has expired"', async () => {
    const tokens = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
    assert.equal(tokens.expires_in, 1);
    const sub = decodeJwtPart(tokens.access_token, 1).sub;
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const response = await request(server.url, 'GET', `/users/${sub}`, { token: tokens.access_token });
    assert.equal(response.status, 401);
    assert.equal(response.body.detail, 'Token has expired');
    assert.equal(
      response.headers.get('www-authenticate'),
      'Bearer error="invalid_token", error_description="Token has expired"',
    );
  });
});

describe('signing algorithm', () => {
  for (const algorithm of ['RS384', 'RS512', 'PS256', 'PS384', 'PS512']) {
    test(`${algorithm} tokens verify with a standard JOSE library and on the service`, async () => {
      const server = await startTestServer({ env: { ACCESS_TOKEN_ALG: algorithm } });
      try {
        const { access_token: token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
        const [current] = (await openKeyRingStore(server.keysDir).read()).signing;
        assert.deepEqual(decodeJwtPart(token, 0), { alg: algorithm, typ: 'at+jwt', kid: current.kid });
        await jwtVerify(token, current.publicKey, { algorithms: [algorithm], typ: 'at+jwt' });
        const response = await request(server.url, 'GET', `/users/${decodeJwtPart(token, 1).sub}`, { token });
        assert.equal(response.status, 200);
      } finally {
        await server.close();
      }
    });
  }

  test('ACCESS_TOKEN_ALG selects the algorithm, and verification pins it', async () => {
    const ps = await startTestServer({ env: { ACCESS_TOKEN_ALG: 'PS256' } });
    const rs = await startTestServer({ env: { ACCESS_TOKEN_ALG: 'RS256' }, keysDir: ps.keysDir });
    try {
      const tokens = await passwordGrant(ps.url, FRONTEND_CLIENT, SEEDED_USER);
      assert.equal(decodeJwtPart(tokens.access_token, 0).alg, 'PS256');
      // Same keys, other pinned algorithm: refused.
      const response = await request(rs.url, 'GET', `/users/${decodeJwtPart(tokens.access_token, 1).sub}`, {
        token: tokens.access_token,
      });
      assert.equal(response.status, 401);
      assert.match(String(response.body.detail), /algorithm/);
    } finally {
      await rs.close();
      await ps.close();
    }
  });
});
