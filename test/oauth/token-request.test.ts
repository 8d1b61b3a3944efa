/** How the token endpoint reads a request: which parameters count, and what is missing. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FRONTEND_CLIENT, passwordRequest, request } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('token request parameters', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('a request without scope is invalid_scope: no default scope is configured', async () => {
    const { scope: _omitted, ...withoutScope } = passwordRequest();
    for (const body of [
      withoutScope,
      { ...withoutScope, scope: '' },
      { ...withoutScope, scope: '  ' },
      { grant_type: 'client_credentials', ...FRONTEND_CLIENT },
    ]) {
      const response = await request(server.url, 'POST', '/security/generate-token', { json: body });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_scope');
      assert.equal(response.body.detail, 'Invalid scope');
    }
  });

  for (const name of ['__proto__', 'constructor', 'prototype']) {
    test(`a token request hidden under a "${name}" member is not read`, async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        raw: `{"${name}": ${JSON.stringify(passwordRequest())}}`,
        headers: { 'Content-Type': 'application/json' },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'invalid_request');
      assert.equal(response.body.access_token, undefined);
    });
  }

  test('a "__proto__" member beside a real request changes nothing', async () => {
    const response = await request(server.url, 'POST', '/security/generate-token', {
      raw: `{"__proto__": {"scope": "other"}, ${JSON.stringify(passwordRequest()).slice(1)}`,
      headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(response.status, 200);
    assert.equal(typeof response.body.access_token, 'string');
  });
});
