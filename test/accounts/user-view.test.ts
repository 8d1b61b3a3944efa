import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  ADMIN_CLIENT,
  decodeJwtPart,
  FRONTEND_CLIENT,
  passwordGrant,
  request,
  SEEDED_ADMIN,
  SEEDED_USER,
} from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';

for (const backend of backends()) {
  describe(`GET /users/{id} (${backend})`, () => {
    let server: TestServer;
    let userToken: string;
    let userId: string;
    let adminToken: string;
    let otherUserId: string;
    before(async () => {
      server = await startTestServer({ backend });
      userToken = (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).access_token;
      userId = String(decodeJwtPart(userToken, 1).sub);
      adminToken = (await passwordGrant(server.url, ADMIN_CLIENT, SEEDED_ADMIN)).access_token;
      const now = new Date();
      otherUserId = randomUUID();
      await server.app.stores.users.create({
        id: otherUserId,
        identity: 'other@example.com',
        passwordHash: 'x',
        firstName: 'Other',
        lastName: null,
        status: 'active',
        roles: [],
        sessionKey: '',
        hasAvatar: false,
        createdAt: now,
        updatedAt: now,
      });
    });
    after(() => server.close());

    test('a user reads their own account as HAL, without the password hash', async () => {
      const response = await request(server.url, 'GET', `/users/${userId}`, { token: userToken });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/hal+json');
      assert.equal(response.body.identity, SEEDED_USER.username);
      assert.equal(response.body.status, 'active');
      assert.deepEqual(response.body._links, { self: { href: `/users/${userId}` } });
      assert.ok(!('passwordHash' in response.body));
      assert.ok(!JSON.stringify(response.body).includes('$2'), 'no bcrypt hash anywhere');
    });

    test("a user reading another user's account is refused with 403", async () => {
      const response = await request(server.url, 'GET', `/users/${otherUserId}`, { token: userToken });
      assert.equal(response.status, 403);
    });

    test('an admin reads any user; an unknown id is 404', async () => {
      const response = await request(server.url, 'GET', `/users/${otherUserId}`, { token: adminToken });
      assert.equal(response.status, 200);
      assert.equal(response.body.firstName, 'Other');
      const missing = await request(server.url, 'GET', `/users/${randomUUID()}`, { token: adminToken });
      assert.equal(missing.status, 404);
    });

    test('a guest is refused with 401', async () => {
      const response = await request(server.url, 'GET', `/users/${userId}`);
      assert.equal(response.status, 401);
    });
  });
}
