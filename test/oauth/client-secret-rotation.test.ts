/**
 * A confidential client's secret rotated with an overlap, over HTTP: the secret before the
 * rotation stays accepted until the overlap ends or is retired, then is refused; the client's
 * representation says until when, never a secret; tokens already issued do not notice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { superuserToken } from '../support/authorization.ts';
import { decodeJwtPart, request, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';

describeBackendSkip();

/** The overlap a rotation gets when it names none, and the longest it may name (docs/security.md). */
const DEFAULT_OVERLAP_SECONDS = 24 * 60 * 60;
const MAX_OVERLAP_SECONDS = 7 * 24 * 60 * 60;

for (const backend of backends())
  describe(`client secret rotation with overlap (${backend})`, () => {
    let server: TestServer;
    let token: string;
    let counter = 0;
    const unique = (prefix: string) => `${prefix}-${Date.now()}-${++counter}`;
    const call = (method: string, path: string, json?: unknown) =>
      request(server.url, method, path, { token, ...(json === undefined ? {} : { json }) });

    /** A confidential client of the user accounts that signs them in and refreshes; its first secret. */
    async function confidential(): Promise<{ name: string; secret: string }> {
      const name = unique('svc');
      const created = await call('POST', '/oauth-clients', {
        name,
        type: 'confidential',
        accounts: 'user',
        grants: ['password', 'refresh_token', 'client_credentials'],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return { name, secret: String(created.body.secret) };
    }

    const rotate = (name: string, change: Record<string, unknown> = {}) =>
      call('PATCH', `/oauth-clients/${name}`, { rotateSecret: true, ...change });

    /** The status of a client credentials grant with this secret, sent as HTTP Basic. */
    async function accepts(name: string, secret: unknown): Promise<boolean> {
      const basic = Buffer.from(`${name}:${String(secret)}`).toString('base64');
      const answer = await request(server.url, 'POST', '/security/generate-token', {
        form: { grant_type: 'client_credentials', scope: 'api' },
        headers: { Authorization: `Basic ${basic}` },
      });
      assert.ok([200, 401].includes(answer.status), JSON.stringify(answer.body));
      return answer.status === 200;
    }

    before(async () => {
      server = await startTestServer({ backend });
      token = await superuserToken(server.url);
    });
    after(() => server.close());

    test('both secrets work during the overlap; the representation says until when, never a secret', async () => {
      const { name, secret: first } = await confidential();
      const before = Date.now();
      const rotated = await rotate(name, { previousSecretOverlapSeconds: 600 });
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      assert.equal(rotated.headers.get('cache-control'), 'no-store');
      const second = String(rotated.body.secret);
      assert.match(second, /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(second, first);
      const until = Date.parse(String(rotated.body.previousSecretExpiresAt));
      assert.ok(until >= before + 600_000 && until <= Date.now() + 600_000, String(until - before));

      assert.equal(await accepts(name, first), true, 'the secret before the rotation');
      assert.equal(await accepts(name, second), true, 'the new secret');
      assert.equal(await accepts(name, 'neither'), false);
      assert.equal(await accepts(name, `${first}x`), false);

      const read = await call('GET', `/oauth-clients/${name}`);
      assert.equal(read.body.previousSecretExpiresAt, rotated.body.previousSecretExpiresAt);
      assert.equal(read.body.secret, undefined);
      for (const answer of [read, await call('GET', '/oauth-clients')]) {
        const text = JSON.stringify(answer.body);
        assert.ok(!text.includes(first) && !text.includes(second), 'no secret, nor its digest, is shown');
        assert.ok(!/[0-9a-f]{64}/.test(text), 'no digest is shown');
      }
    });

    test(`without previousSecretOverlapSeconds the overlap is ${DEFAULT_OVERLAP_SECONDS} s`, async () => {
      const { name, secret: first } = await confidential();
      const before = Date.now();
      const rotated = await rotate(name);
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      const until = Date.parse(String(rotated.body.previousSecretExpiresAt));
      assert.ok(until >= before + DEFAULT_OVERLAP_SECONDS * 1000);
      assert.ok(until <= Date.now() + DEFAULT_OVERLAP_SECONDS * 1000);
      assert.equal(await accepts(name, first), true);
    });

    test('the overlap ends by itself: the old secret is refused, and the next write clears its digest', async () => {
      const { name, secret: first } = await confidential();
      const rotated = await rotate(name, { previousSecretOverlapSeconds: 1 });
      assert.equal(await accepts(name, first), true);
      await delay(1100);
      assert.equal(await accepts(name, first), false);
      assert.equal(await accepts(name, rotated.body.secret), true);
      assert.equal((await call('GET', `/oauth-clients/${name}`)).body.previousSecretExpiresAt, null);

      assert.ok((await server.app.stores.clients.findByName(name))?.previousSecretDigest);
      const written = await call('PATCH', `/oauth-clients/${name}`, { grants: ['client_credentials'] });
      assert.equal(written.status, 200, JSON.stringify(written.body));
      const stored = await server.app.stores.clients.findByName(name);
      assert.equal(stored?.previousSecretDigest, null);
      assert.equal(stored?.previousSecretExpiresAt, null);
    });

    test('retirePreviousSecret ends the overlap now; the new secret keeps working', async () => {
      const { name, secret: first } = await confidential();
      const rotated = await rotate(name, { previousSecretOverlapSeconds: 600 });
      assert.equal(await accepts(name, first), true);
      const retired = await call('PATCH', `/oauth-clients/${name}`, { retirePreviousSecret: true });
      assert.equal(retired.status, 200, JSON.stringify(retired.body));
      assert.equal(retired.body.previousSecretExpiresAt, null);
      assert.equal(retired.body.secret, undefined, 'retiring makes no secret');
      assert.equal(await accepts(name, first), false);
      assert.equal(await accepts(name, rotated.body.secret), true);
      const again = await call('PATCH', `/oauth-clients/${name}`, { retirePreviousSecret: true });
      assert.equal(again.status, 200, 'retiring when nothing overlaps changes nothing');
      assert.equal(await accepts(name, rotated.body.secret), true);
    });

    test('a second rotation during an overlap: the oldest secret stops at once, the two newest work', async () => {
      const { name, secret: first } = await confidential();
      const second = (await rotate(name, { previousSecretOverlapSeconds: 600 })).body.secret;
      const before = Date.now();
      const third = await rotate(name, { previousSecretOverlapSeconds: 300 });
      assert.equal(third.status, 200, JSON.stringify(third.body));
      assert.equal(await accepts(name, first), false);
      assert.equal(await accepts(name, second), true);
      assert.equal(await accepts(name, third.body.secret), true);
      const until = Date.parse(String(third.body.previousSecretExpiresAt));
      assert.ok(until >= before + 300_000 && until <= Date.now() + 300_000, 'the new overlap counts');
    });

    test('previousSecretOverlapSeconds 0: the old secret stops at once, nothing overlaps', async () => {
      const { name, secret: first } = await confidential();
      const rotated = await rotate(name, { previousSecretOverlapSeconds: 0 });
      assert.equal(rotated.status, 200);
      assert.equal(rotated.body.previousSecretExpiresAt, null);
      assert.equal(await accepts(name, first), false);
      assert.equal(await accepts(name, rotated.body.secret), true);
    });

    test(`the longest overlap is ${MAX_OVERLAP_SECONDS} s`, async () => {
      const { name } = await confidential();
      const rotated = await rotate(name, { previousSecretOverlapSeconds: MAX_OVERLAP_SECONDS });
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    });

    test('tokens issued with the old secret keep working, and the client registration they name stays', async () => {
      const { name, secret: first } = await confidential();
      const login = await request(server.url, 'POST', '/security/generate-token', {
        json: { grant_type: 'password', scope: 'api', client_id: name, client_secret: first, ...SEEDED_USER },
      });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      const access = String(login.body.access_token);
      const claims = decodeJwtPart(access, 1);
      const rotated = await rotate(name, { previousSecretOverlapSeconds: 0 });
      const second = String(rotated.body.secret);

      const own = await request(server.url, 'GET', `/users/${String(claims.sub)}`, { token: access });
      assert.equal(own.status, 200, 'the access token issued before the rotation');
      const refreshed = await request(server.url, 'POST', '/security/refresh-token', {
        json: {
          grant_type: 'refresh_token',
          refresh_token: String(login.body.refresh_token),
          client_id: name,
          client_secret: second,
        },
      });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      const after = decodeJwtPart(String(refreshed.body.access_token), 1);
      assert.equal(after.client_rid, claims.client_rid);
      assert.equal(after.client_id, name);
    });

    test('two rotations at once: both answer, and each secret handed out works', async () => {
      const { name } = await confidential();
      // Slow writes: two rotations made side by side would both read the first secret.
      const { clients } = server.app.stores;
      const update = clients.update;
      clients.update = async (...args) => {
        await delay(100);
        return update.apply(clients, args);
      };
      let answers: Awaited<ReturnType<typeof rotate>>[];
      try {
        answers = await Promise.all([0, 1].map(() => rotate(name, { previousSecretOverlapSeconds: 600 })));
      } finally {
        clients.update = update;
      }
      for (const answer of answers) {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.equal(await accepts(name, answer.body.secret), true);
      }
    });

    describe('refusals: 400 naming the member, the client and its secrets unchanged', () => {
      const cases: [string, Record<string, unknown>, string][] = [
        [
          'an overlap past the longest',
          { rotateSecret: true, previousSecretOverlapSeconds: MAX_OVERLAP_SECONDS + 1 },
          'previousSecretOverlapSeconds',
        ],
        [
          'a negative overlap',
          { rotateSecret: true, previousSecretOverlapSeconds: -1 },
          'previousSecretOverlapSeconds',
        ],
        [
          'an overlap that is no whole number',
          { rotateSecret: true, previousSecretOverlapSeconds: 1.5 },
          'previousSecretOverlapSeconds',
        ],
        [
          'an overlap as text',
          { rotateSecret: true, previousSecretOverlapSeconds: '600' },
          'previousSecretOverlapSeconds',
        ],
        [
          'an overlap without a rotation',
          { previousSecretOverlapSeconds: 600 },
          'previousSecretOverlapSeconds',
        ],
        [
          'an overlap with rotateSecret false',
          { rotateSecret: false, previousSecretOverlapSeconds: 600 },
          'previousSecretOverlapSeconds',
        ],
        [
          'a rotation and a retirement at once',
          { rotateSecret: true, retirePreviousSecret: true },
          'retirePreviousSecret',
        ],
      ];
      for (const [title, body, field] of cases) {
        test(title, async () => {
          const { name, secret: first } = await confidential();
          const second = (await rotate(name, { previousSecretOverlapSeconds: 600 })).body.secret;
          const before = await call('GET', `/oauth-clients/${name}`);
          const refused = await call('PATCH', `/oauth-clients/${name}`, body);
          assert.equal(refused.status, 400, JSON.stringify(refused.body));
          assert.ok(field in (refused.body.errors as object), JSON.stringify(refused.body.errors));
          assert.deepEqual((await call('GET', `/oauth-clients/${name}`)).body, before.body);
          assert.equal(await accepts(name, first), true);
          assert.equal(await accepts(name, second), true);
        });
      }

      test('a public client has no secret to rotate or retire', async () => {
        const name = unique('spa');
        const created = await call('POST', '/oauth-clients', {
          name,
          type: 'public',
          accounts: 'user',
          grants: ['refresh_token'],
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        for (const body of [{ rotateSecret: true }, { retirePreviousSecret: true }]) {
          const refused = await call('PATCH', `/oauth-clients/${name}`, body);
          assert.equal(refused.status, 400);
          assert.deepEqual(Object.keys(refused.body.errors as object), Object.keys(body));
        }
        assert.deepEqual((await call('GET', `/oauth-clients/${name}`)).body, created.body);
      });
    });
  });
