import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { AdminRole } from '../../src/accounts/model.ts';
import { ADMIN_CLIENT, refreshGrant, request, SEEDED_ADMIN } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin, PASSWORD, storeAccount } from './fixtures.ts';

for (const backend of backends()) {
  describe(`administrator accounts (${backend})`, () => {
    let server: TestServer;
    let superToken: string;
    let seededAdminId: string;
    before(async () => {
      server = await startTestServer({ backend });
      const tokens = await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password);
      superToken = tokens.access_token;
      seededAdminId = String(
        (await request(server.url, 'GET', '/admins/my-account', { token: superToken })).body.id,
      );
    });
    after(() => server.close());

    const hash = (password: string) => server.app.passwords.hash(password);
    async function plainAdmin(identity: string) {
      const account = await storeAccount(server.app.stores.admins, hash, { identity, roles: ['admin'] });
      return { account, token: (await adminLogin(server.url, identity)).access_token };
    }

    test('GET /admins lists administrators under _embedded.admins', async () => {
      const response = await request(server.url, 'GET', '/admins?sort=identity', { token: superToken });
      assert.equal(response.status, 200);
      const admins = (response.body._embedded as { admins: { identity: string; roles: string[] }[] }).admins;
      assert.ok(admins.some((a) => a.identity === SEEDED_ADMIN.username && a.roles.includes('superuser')));
      assert.equal(response.body.total, admins.length);
      assert.equal(
        (await request(server.url, 'GET', '/admins?limit=500', { token: superToken })).status,
        400,
      );
    });

    test('a superuser creates admins (roles default to [admin]); identity rules and duplicates', async () => {
      const created = await request(server.url, 'POST', '/admins', {
        token: superToken,
        json: { identity: 'ops.team', password: PASSWORD, passwordConfirm: PASSWORD, lastName: 'Ops' },
      });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('location'), `/admins/${created.body.id}`);
      assert.deepEqual(created.body.roles, ['admin']);
      assert.equal(created.body.status, 'active');
      await adminLogin(server.url, 'ops.team');
      assert.equal(
        (
          await request(server.url, 'POST', '/admins', {
            token: superToken,
            json: { identity: 'admin', password: PASSWORD },
          })
        ).status,
        409,
      );
      for (const [json, field] of [
        [{ identity: 'has space', password: PASSWORD }, 'identity'],
        [{ identity: '', password: PASSWORD }, 'identity'],
        [{ identity: 'shorty', password: 'short' }, 'password'],
        [{ identity: 'same-as-pw', password: 'same-as-pw' }, 'password'],
        [{ identity: 'roles', password: PASSWORD, roles: ['root'] }, 'roles'],
        [{ identity: 'roles2', password: PASSWORD, roles: [] }, 'roles'],
      ] as const) {
        const response = await request(server.url, 'POST', '/admins', { token: superToken, json });
        assert.equal(response.status, 400, JSON.stringify(json));
        const fields = Object.keys(response.body.errors as object);
        assert.ok(
          fields.some((name) => name === field || name.startsWith(`${field}.`)),
          JSON.stringify(response.body),
        );
      }
    });

    test('admin identities are unique without regard to case, and sign-in finds any spelling', async () => {
      const created = await request(server.url, 'POST', '/admins', {
        token: superToken,
        json: { identity: 'Case.Admin', password: PASSWORD },
      });
      assert.equal(created.status, 201);
      const twin = await request(server.url, 'POST', '/admins', {
        token: superToken,
        json: { identity: 'case.admin', password: PASSWORD },
      });
      assert.equal(twin.status, 409);
      const other = await plainAdmin('case-other');
      const renamed = await request(server.url, 'PATCH', `/admins/${other.account.id}`, {
        token: superToken,
        json: { identity: 'CASE.ADMIN' },
      });
      assert.equal(renamed.status, 409);
      const session = await adminLogin(server.url, 'CASE.admin');
      const me = await request(server.url, 'GET', '/admins/my-account', { token: session.access_token });
      assert.equal(me.body.id, created.body.id);
      assert.equal(me.body.identity, 'Case.Admin', 'shown as it was given');
    });

    test('a plain admin changes the names of plain admins, and nothing else of an administrator', async () => {
      const actor = await plainAdmin('plain-actor');
      const other = await plainAdmin('plain-other');
      const token = actor.token;
      const renamed = await request(server.url, 'PATCH', `/admins/${other.account.id}`, {
        token,
        json: { firstName: 'Other', lastName: null },
      });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.firstName, 'Other');
      const deactivate = await request(server.url, 'PATCH', `/admins/${other.account.id}`, {
        token,
        json: { firstName: 'Sneaky', status: 'inactive' },
      });
      assert.equal(deactivate.status, 403);
      assert.match(String(deactivate.body.detail), /Only a superuser may change an administrator's status/);
      const unchanged = await server.app.stores.admins.findById(other.account.id);
      assert.equal(unchanged?.status, 'active', 'a refused change changes nothing');
      assert.equal(unchanged?.firstName, 'Other');
      const onSuperuser = await request(server.url, 'PATCH', `/admins/${seededAdminId}`, {
        token,
        json: { firstName: 'Hijack' },
      });
      assert.equal(onSuperuser.status, 403);
      const promote = await request(server.url, 'PATCH', `/admins/${actor.account.id}`, {
        token,
        json: { roles: ['superuser'] },
      });
      assert.equal(promote.status, 403);
      const ownPassword = await request(server.url, 'PATCH', `/admins/${actor.account.id}`, {
        token,
        json: { password: 'a password of my own' },
      });
      assert.equal(ownPassword.status, 403);
      assert.match(String(ownPassword.body.detail), /PATCH \/admins\/my-account/);
      assert.equal(
        (await request(server.url, 'GET', `/admins/${seededAdminId}`, { token })).status,
        200,
        'but any admin may read any admin',
      );
      assert.equal((await request(server.url, 'GET', '/admins/not-a-uuid', { token })).status, 404);
    });

    test('who may change which field of which administrator', async () => {
      type Actor = 'plain' | 'superuser';
      type Target = 'other plain admin' | 'themself' | 'another superuser';
      const CHANGES = {
        names: () => ({ firstName: 'New', lastName: 'Names' }),
        identity: () => ({ identity: `renamed-${randomUUID().slice(0, 8)}` }),
        password: () => ({ password: 'chosen for someone' }),
        status: () => ({ status: 'inactive' }),
        roles: () => ({ roles: ['admin', 'superuser'] }),
      };
      type Field = keyof typeof CHANGES;
      const everything = (status: number, except: Partial<Record<Field, number>> = {}) =>
        ({ names: status, identity: status, password: status, status, roles: status, ...except }) as Record<
          Field,
          number
        >;
      const EXPECTED: Record<Actor, Record<Target, Record<Field, number>>> = {
        plain: {
          'other plain admin': everything(403, { names: 200 }),
          // Their own password through /admins/my-account, with the current one.
          themself: everything(403, { names: 200 }),
          'another superuser': everything(403),
        },
        superuser: {
          'other plain admin': everything(200),
          themself: everything(200, { password: 403 }),
          'another superuser': everything(200),
        },
      };
      const admin = (roles: AdminRole[]) =>
        storeAccount(server.app.stores.admins, hash, { identity: `cell-${randomUUID()}`, roles });
      const failures: string[] = [];
      for (const [actorKind, targets] of Object.entries(EXPECTED) as [
        Actor,
        Record<Target, Record<Field, number>>,
      ][]) {
        for (const [targetKind, fields] of Object.entries(targets) as [Target, Record<Field, number>][]) {
          for (const [field, expected] of Object.entries(fields) as [Field, number][]) {
            // Fresh accounts per cell: a deactivation or a new password ends the sessions it acts on.
            const actor = await admin(actorKind === 'plain' ? ['admin'] : ['superuser']);
            const { access_token: token } = await adminLogin(server.url, actor.identity);
            const target =
              targetKind === 'themself'
                ? actor
                : await admin(targetKind === 'another superuser' ? ['superuser'] : ['admin']);
            const before = await server.app.stores.admins.findById(target.id);
            const response = await request(server.url, 'PATCH', `/admins/${target.id}`, {
              token,
              json: CHANGES[field](),
            });
            const cell = `${actorKind} changing the ${field} of ${targetKind}`;
            if (response.status !== expected)
              failures.push(`${cell}: ${response.status}, expected ${expected}`);
            if (expected === 403)
              assert.deepEqual(
                await server.app.stores.admins.findById(target.id),
                before,
                `${cell} changed nothing`,
              );
          }
        }
      }
      assert.deepEqual(failures, []);
    });

    test('a superuser changes roles; a password change ends the sessions of that admin', async () => {
      const target = await plainAdmin('to-promote');
      const session = await adminLogin(server.url, 'to-promote');
      const promoted = await request(server.url, 'PATCH', `/admins/${target.account.id}`, {
        token: superToken,
        json: { roles: ['admin', 'superuser'], password: 'another password' },
      });
      assert.equal(promoted.status, 200);
      assert.deepEqual(promoted.body.roles, ['admin', 'superuser']);
      assert.equal((await refreshGrant(server.url, ADMIN_CLIENT, session.refresh_token)).status, 400);
      const token = (await adminLogin(server.url, 'to-promote', 'another password')).access_token;
      assert.equal(
        (
          await request(server.url, 'POST', '/admins', {
            token,
            json: { identity: 'by-new-super', password: PASSWORD },
          })
        ).status,
        201,
      );
    });

    test('DELETE /admins/{id} anonymises the admin and refuses its tokens at once', async () => {
      const target = await plainAdmin('short-lived');
      const response = await request(server.url, 'DELETE', `/admins/${target.account.id}`, {
        token: superToken,
      });
      assert.equal(response.status, 204);
      assert.equal(
        (await request(server.url, 'GET', '/admins/my-account', { token: target.token })).status,
        401,
      );
      const record = await request(server.url, 'GET', `/admins/${target.account.id}`, { token: superToken });
      assert.equal(record.body.identity, `deleted-${target.account.id}@invalid`);
      assert.equal(record.body.status, 'deleted');
      assert.deepEqual(record.body.roles, []);
      assert.equal(
        (await request(server.url, 'DELETE', `/admins/${target.account.id}`, { token: superToken })).status,
        404,
      );
    });
  });

  describe(`the last active superuser (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    test('cannot be deleted, demoted or deactivated (409) until another superuser exists', async () => {
      const token = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
      const self = await request(server.url, 'GET', '/admins/my-account', { token });
      const path = `/admins/${self.body.id}`;
      // The other superuser is inactive, so it does not count.
      await storeAccount(server.app.stores.admins, (p) => server.app.passwords.hash(p), {
        identity: 'dormant',
        roles: ['superuser'],
        status: 'inactive',
      });
      for (const [method, json] of [
        ['DELETE', undefined],
        ['PATCH', { roles: ['admin'] }],
        ['PATCH', { status: 'inactive' }],
      ] as const) {
        const response = await request(server.url, method, path, { token, json });
        assert.equal(response.status, 409, `${method} ${JSON.stringify(json)}`);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        assert.match(String(response.body.detail), /last active superuser/);
      }
      const renamed = await request(server.url, 'PATCH', path, { token, json: { firstName: 'Still' } });
      assert.equal(renamed.status, 200, 'other changes are fine');

      const second = await request(server.url, 'POST', '/admins', {
        token,
        json: { identity: 'second-super', password: PASSWORD, roles: ['superuser'] },
      });
      assert.equal(second.status, 201);
      assert.equal((await request(server.url, 'DELETE', path, { token })).status, 204);
      const secondToken = (await adminLogin(server.url, 'second-super')).access_token;
      const lastOne = await request(server.url, 'DELETE', `/admins/${second.body.id}`, {
        token: secondToken,
      });
      assert.equal(lastOne.status, 409);
    });
  });

  describe(`the last active superuser under concurrent changes (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    /** Every way a superuser stops being one; a new password is hashed between check and write. */
    const removals = [
      (id: string) => ['DELETE', `/admins/${id}`, undefined] as const,
      (id: string) =>
        ['PATCH', `/admins/${id}`, { roles: ['admin'], password: 'another horse battery' }] as const,
      (id: string) => ['PATCH', `/admins/${id}`, { status: 'inactive' }] as const,
      (id: string) => ['PATCH', `/admins/${id}`, { roles: ['admin'] }] as const,
    ];

    /** Eight new superusers, signed in, and every other superuser demoted: they are all there are. */
    async function onlySuperusers(round: number): Promise<{ id: string; token: string }[]> {
      const superusers = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const identity = `super-${round}-${i}`;
          const hash = (password: string) => server.app.passwords.hash(password);
          const account = await storeAccount(server.app.stores.admins, hash, {
            identity,
            roles: ['superuser'],
          });
          return { id: account.id, token: (await adminLogin(server.url, identity)).access_token };
        }),
      );
      const token = superusers[0]?.token;
      const listed = await request(server.url, 'GET', '/admins?status=active&limit=100', { token });
      const admins = (listed.body._embedded as { admins: { id: string; roles: string[] }[] }).admins;
      for (const { id, roles } of admins) {
        if (!roles.includes('superuser') || superusers.some((superuser) => superuser.id === id)) continue;
        const demoted = await request(server.url, 'PATCH', `/admins/${id}`, {
          token,
          json: { roles: ['admin'] },
        });
        assert.equal(demoted.status, 200, JSON.stringify(demoted.body));
      }
      return superusers;
    }

    for (const [round, kinds] of [
      [1, 'in every way'],
      [2, 'in every way'],
      [3, 'each with a new password'],
    ] as const) {
      test(`superusers removing each other all at once, ${kinds}, leave one (round ${round})`, async () => {
        const superusers = await onlySuperusers(round);
        // Each acts on the next one, in a ring, with its own token.
        const answers = await Promise.all(
          superusers.map(({ token }, i) => {
            const next = superusers[(i + 1) % superusers.length];
            const removal = removals[kinds === 'in every way' ? (i + round) % removals.length : 1];
            assert.ok(next && removal);
            const [method, path, json] = removal(next.id);
            return request(server.url, method, path, { token, json });
          }),
        );
        for (const answer of answers)
          assert.ok([200, 204, 401, 403, 409].includes(answer.status), JSON.stringify(answer.body));
        const active = await server.app.stores.admins.count({ role: 'superuser', status: 'active' });
        assert.ok(active >= 1, `${active} active superusers left; answers ${answers.map((a) => a.status)}`);
      });
    }
  });
}
