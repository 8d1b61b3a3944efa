/**
 * The registration of OAuth clients by superusers, over HTTP: what a client is made of, the
 * secret that is shown once, the rules between its fields, and what deleting one ends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { registerClient, SPA_REDIRECT, superuserToken } from '../support/authorization.ts';
import { decodeJwtPart, passwordGrant, request, SEEDED_ADMIN, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';

describeBackendSkip();

for (const backend of backends())
  describe(`OAuth client management (${backend})`, () => {
    let server: TestServer;
    let token: string;
    let counter = 0;
    const unique = (prefix: string) => `${prefix}-${Date.now()}-${++counter}`;
    const call = (method: string, path: string, json?: unknown) =>
      request(server.url, method, path, { token, ...(json === undefined ? {} : { json }) });
    /** A confidential client for the user accounts, registered through the API. */
    const confidential = (name: string, grants: string[]) =>
      call('POST', '/oauth-clients', { name, type: 'confidential', grants, accounts: 'user' });

    before(async () => {
      server = await startTestServer({ backend });
      token = await superuserToken(server.url);
    });
    after(() => server.close());

    test('a public client: 201 with Location, no secret, as the JSON body said', async () => {
      const name = unique('spa');
      const created = await call('POST', '/oauth-clients', {
        name,
        type: 'public',
        redirectUris: [SPA_REDIRECT],
        grants: ['authorization_code', 'refresh_token'],
        accounts: 'user',
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.headers.get('location'), `/oauth-clients/${name}`);
      assert.equal(created.headers.get('content-type'), 'application/hal+json');
      const { createdAt, updatedAt, ...rest } = created.body;
      assert.deepEqual(rest, {
        name,
        type: 'public',
        accounts: 'user',
        grants: ['authorization_code', 'refresh_token'],
        redirectUris: [SPA_REDIRECT],
        previousSecretExpiresAt: null,
        _links: { self: { href: `/oauth-clients/${name}` } },
      });
      assert.equal(createdAt, updatedAt);
      const read = await call('GET', `/oauth-clients/${name}`);
      assert.deepEqual(read.body, created.body);
    });

    test("a confidential client's secret has 256 bits, works, and appears in the creation answer only", async () => {
      const name = unique('machine');
      const created = await confidential(name, ['client_credentials']);
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('cache-control'), 'no-store');
      const secret = String(created.body.secret);
      assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(Buffer.from(secret, 'base64url').length, 32);
      assert.deepEqual(created.body.redirectUris, []);

      const tokens = await request(server.url, 'POST', '/security/generate-token', {
        form: { grant_type: 'client_credentials', scope: 'api', client_id: name, client_secret: secret },
      });
      assert.equal(tokens.status, 200, JSON.stringify(tokens.body));

      assert.equal((await call('GET', `/oauth-clients/${name}`)).body.secret, undefined);
      const listed = await call('GET', '/oauth-clients');
      const clients = (listed.body._embedded as { 'oauth-clients': Record<string, unknown>[] })[
        'oauth-clients'
      ];
      assert.ok(clients.some((client) => client.name === name));
      assert.ok(clients.every((client) => client.secret === undefined));
      assert.ok(!JSON.stringify(listed.body).includes(secret));
    });

    test('the list holds every client, the seeded ones too, ordered by name', async () => {
      const listed = await call('GET', '/oauth-clients');
      assert.equal(listed.status, 200);
      const clients = (listed.body._embedded as { 'oauth-clients': { name: string }[] })['oauth-clients'];
      const names = clients.map((client) => client.name);
      assert.deepEqual(names, [...names].sort());
      assert.equal(listed.body.total, names.length);
      const frontend = clients.find((client) => client.name === 'frontend');
      assert.deepEqual(frontend && { ...frontend, createdAt: 0, updatedAt: 0 }, {
        name: 'frontend',
        type: 'confidential',
        accounts: 'user',
        grants: ['password', 'refresh_token', 'client_credentials'],
        redirectUris: [],
        previousSecretExpiresAt: null,
        createdAt: 0,
        updatedAt: 0,
        _links: { self: { href: '/oauth-clients/frontend' } },
      });
    });

    test('rotateSecret without an overlap gives a new secret once; the old one stops working', async () => {
      const name = unique('rotating');
      const created = await confidential(name, ['client_credentials']);
      const rotated = await call('PATCH', `/oauth-clients/${name}`, {
        rotateSecret: true,
        previousSecretOverlapSeconds: 0,
      });
      assert.equal(rotated.status, 200);
      assert.equal(rotated.headers.get('cache-control'), 'no-store');
      assert.notEqual(rotated.body.secret, created.body.secret);
      const grant = (secret: unknown) =>
        request(server.url, 'POST', '/security/generate-token', {
          form: {
            grant_type: 'client_credentials',
            scope: 'api',
            client_id: name,
            client_secret: String(secret),
          },
        });
      assert.equal((await grant(created.body.secret)).status, 401);
      assert.equal((await grant(rotated.body.secret)).status, 200);
      assert.equal(rotated.body.previousSecretExpiresAt, null);
      const unchanged = await call('PATCH', `/oauth-clients/${name}`, {});
      assert.equal(unchanged.body.secret, undefined);
    });

    test('PATCH changes the redirect URIs and the grants', async () => {
      const { name } = await registerClient(server.url, token, { name: unique('spa'), type: 'public' });
      const changed = await call('PATCH', `/oauth-clients/${name}`, {
        redirectUris: ['https://app.example.test/other', 'http://127.0.0.1/callback'],
        grants: ['authorization_code'],
      });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      assert.deepEqual(changed.body.redirectUris, [
        'https://app.example.test/other',
        'http://127.0.0.1/callback',
      ]);
      assert.deepEqual(changed.body.grants, ['authorization_code']);
      assert.notEqual(changed.body.updatedAt, changed.body.createdAt);
      assert.deepEqual((await call('GET', `/oauth-clients/${name}`)).body, changed.body);
    });

    describe('what a client cannot be: 400 naming the field, nothing stored', () => {
      const valid = {
        type: 'public',
        redirectUris: [SPA_REDIRECT],
        grants: ['authorization_code'],
        accounts: 'user',
      };
      const cases: [string, Record<string, unknown>, string][] = [
        ['an unknown member', { ...valid, secret: 'chosen' }, 'secret'],
        ['a name with a space', { ...valid, name: 'my app' }, 'name'],
        ['an unknown type', { ...valid, type: 'trusted' }, 'type'],
        ['an unknown grant', { ...valid, grants: ['implicit'] }, 'grants.0'],
        ['no grant', { ...valid, grants: [] }, 'grants'],
        ['a public client with the password grant', { ...valid, grants: ['password'] }, 'grants'],
        ['a public client with client credentials', { ...valid, grants: ['client_credentials'] }, 'grants'],
        ['the code grant without redirect URIs', { ...valid, redirectUris: [] }, 'redirectUris'],
        ['a relative redirect URI', { ...valid, redirectUris: ['/callback'] }, 'redirectUris.0'],
        ['plain http', { ...valid, redirectUris: ['http://app.example.test/cb'] }, 'redirectUris.0'],
        ['http on localhost', { ...valid, redirectUris: ['http://localhost:8080/cb'] }, 'redirectUris.0'],
        ['a fragment', { ...valid, redirectUris: ['https://app.example.test/cb#x'] }, 'redirectUris.0'],
        [
          'another form of the URI',
          { ...valid, redirectUris: ['HTTPS://app.example.test/cb'] },
          'redirectUris.0',
        ],
        [
          'credentials in the URI',
          { ...valid, redirectUris: ['https://u:p@app.example.test/cb'] },
          'redirectUris.0',
        ],
        ...[
          ['a single-label scheme', 'myapp:/cb'],
          ['javascript:', 'javascript:alert(1)'],
          ['data:', 'data:text/html,hi'],
          ['file:', 'file:///etc/passwd'],
          ['an authority after the scheme', 'com.example.app://cb'],
          ['an empty authority after the scheme', 'com.example.app:///cb'],
          ['no path', 'com.example.app:cb'],
          ['a capital in the scheme', 'Com.Example.App:/cb'],
          ['a fragment', 'com.example.app:/cb#x'],
          ['a label ending in a hyphen', 'com.example-.app:/cb'],
          ['an empty label', 'com..app:/cb'],
          ['a plus', 'com.example+app:/cb'],
          ['a label starting with a hyphen', 'com.-example.app:/cb'],
          ['a leading digit', '1com.example.app:/cb'],
        ].map(([shape, uri]): [string, Record<string, unknown>, string] => [
          `a private-use scheme with ${shape}: ${uri}`,
          { ...valid, redirectUris: [uri] },
          'redirectUris.0',
        ]),
        ...['a;b', 'a,b', "a'b", 'a"b', 'a!b', 'a_b', '-a', 'a-', 'a..b', 'a.'].map(
          (host): [string, Record<string, unknown>, string] => [
            `a host that is no host name: ${host}`,
            { ...valid, redirectUris: [SPA_REDIRECT, `https://${host}.example.test/cb`] },
            'redirectUris.1',
          ],
        ),
        ['port 0', { ...valid, redirectUris: ['https://app.example.test:0/cb'] }, 'redirectUris.0'],
        ['loopback port 0', { ...valid, redirectUris: ['http://127.0.0.1:0/cb'] }, 'redirectUris.0'],
        ['a repeated redirect URI', { ...valid, redirectUris: [SPA_REDIRECT, SPA_REDIRECT] }, 'redirectUris'],
        ['another account store', { ...valid, accounts: 'robots' }, 'accounts'],
      ];
      for (const [name, body, field] of cases) {
        test(name, async () => {
          const clientName = unique('invalid');
          const refused = await call('POST', '/oauth-clients', { name: clientName, ...body });
          assert.equal(refused.status, 400, JSON.stringify(refused.body));
          assert.equal(refused.headers.get('content-type'), 'application/problem+json');
          assert.ok(
            Object.keys(refused.body.errors as object).includes(field),
            `${field} in ${JSON.stringify(refused.body.errors)}`,
          );
          assert.equal((await call('GET', `/oauth-clients/${clientName}`)).status, 404);
        });
      }

      test('redirect URIs of every valid shape are still registered', async () => {
        const redirectUris = [
          'https://app.example.test/cb',
          'https://a-b.c-d.example.test/cb?x=1',
          'https://xn--bcher-kva.example/cb',
          'https://localhost/cb',
          'https://10.0.0.1:8443/cb',
          'https://[2001:db8::1]/cb',
          'http://127.0.0.1/cb',
          'http://127.0.0.1:65535/cb',
          'http://[::1]:8080/cb',
          'com.example.app:/oauth2redirect',
          'com.example.app:/',
          'io.github.some-one.app2:/callback/example?x=1',
        ];
        const created = await call('POST', '/oauth-clients', {
          name: unique('shapes'),
          type: 'public',
          grants: ['authorization_code'],
          accounts: 'user',
          redirectUris,
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.deepEqual(created.body.redirectUris, redirectUris);
      });

      test('why a redirect URI is refused: localhost, any other scheme, a private-use one of a confidential client', async () => {
        const problem = async (type: string, uri: string) => {
          const refused = await call('POST', '/oauth-clients', {
            ...valid,
            name: unique('why'),
            type,
            redirectUris: [uri],
          });
          assert.equal(refused.status, 400, JSON.stringify(refused.body));
          return String((refused.body.errors as Record<string, string[]>)['redirectUris.0']);
        };
        assert.match(await problem('public', 'http://localhost:8080/cb'), /use http:\/\/127\.0\.0\.1/);
        assert.match(
          await problem('public', 'myapp:/cb'),
          /reversed domain name.*com\.example\.app:\/oauth2redirect/,
        );
        assert.match(
          await problem('public', 'com.example.app://cb'),
          /com\.example\.app:\/path, with no host/,
        );
        assert.match(await problem('confidential', 'com.example.app:/cb'), /only a public client/i);
        const confidential = await call('POST', '/oauth-clients', {
          ...valid,
          name: unique('web'),
          type: 'confidential',
          redirectUris: ['https://app.example.test/cb'],
        });
        assert.equal(confidential.status, 201, JSON.stringify(confidential.body));
        const changed = await call('PATCH', `/oauth-clients/${confidential.body.name}`, {
          redirectUris: ['com.example.app:/cb'],
        });
        assert.equal(changed.status, 400, JSON.stringify(changed.body));
        assert.match(String((changed.body.errors as Record<string, string[]>)['redirectUris.0']), /public/);
      });

      test('a value outside an enumeration is told the values allowed', async () => {
        const refused = await call('POST', '/oauth-clients', {
          ...valid,
          name: unique('enum'),
          grants: ['authorization_code', 'implicit'],
        });
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.deepEqual((refused.body.errors as Record<string, string[]>)['grants.1'], [
          'Must be one of password, refresh_token, client_credentials, authorization_code',
        ]);
      });

      test('a public client has no secret to rotate; a change must leave the client consistent', async () => {
        const { name } = await registerClient(server.url, token, { name: unique('spa'), type: 'public' });
        const rotate = await call('PATCH', `/oauth-clients/${name}`, { rotateSecret: true });
        assert.equal(rotate.status, 400);
        assert.ok('rotateSecret' in (rotate.body.errors as object));
        const noUris = await call('PATCH', `/oauth-clients/${name}`, { redirectUris: [] });
        assert.equal(noUris.status, 400);
        const password = await call('PATCH', `/oauth-clients/${name}`, { grants: ['password'] });
        assert.equal(password.status, 400);
        const renamed = await call('PATCH', `/oauth-clients/${name}`, { name: 'other' });
        assert.equal(renamed.status, 400);
        assert.deepEqual((await call('GET', `/oauth-clients/${name}`)).body.redirectUris, [SPA_REDIRECT]);
      });
    });

    test('a name taken is 409; an unknown client 404', async () => {
      const taken = await call('POST', '/oauth-clients', {
        name: 'frontend',
        type: 'public',
        grants: ['refresh_token'],
        accounts: 'user',
      });
      assert.equal(taken.status, 409);
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { grants: ['password'] }],
        ['DELETE', undefined],
      ] as const) {
        assert.equal((await call(method, '/oauth-clients/no-such-client', body)).status, 404, method);
      }
    });

    test('deleting a client refuses its tokens from then on, access tokens too, and registering the name again revives none', async () => {
      const name = unique('machine');
      const signIn = async (secret: string) => {
        const credentials = { client_id: name, client_secret: secret };
        const login = await request(server.url, 'POST', '/security/generate-token', {
          json: { grant_type: 'password', scope: 'api', ...credentials, ...SEEDED_USER },
        });
        assert.equal(login.status, 200, JSON.stringify(login.body));
        return {
          credentials,
          access: String(login.body.access_token),
          refresh: String(login.body.refresh_token),
        };
      };
      const readOwn = (access: string) =>
        request(server.url, 'GET', `/users/${String(decodeJwtPart(access, 1).sub)}`, { token: access });
      const first = await signIn(
        String((await confidential(name, ['password', 'refresh_token'])).body.secret),
      );
      assert.equal((await readOwn(first.access)).status, 200);

      assert.equal((await call('DELETE', `/oauth-clients/${name}`)).status, 204);
      assert.equal((await call('GET', `/oauth-clients/${name}`)).status, 404);
      const refresh = await request(server.url, 'POST', '/security/refresh-token', {
        json: { grant_type: 'refresh_token', refresh_token: first.refresh, ...first.credentials },
      });
      assert.equal(refresh.status, 401);
      assert.equal(refresh.body.error, 'invalid_client');
      const read = await readOwn(first.access);
      assert.equal(read.status, 401);
      assert.match(String(read.headers.get('www-authenticate')), /error="invalid_token"/);

      const again = await signIn(
        String((await confidential(name, ['password', 'refresh_token'])).body.secret),
      );
      assert.equal((await readOwn(first.access)).status, 401, 'the old registration stays gone');
      assert.equal((await readOwn(again.access)).status, 200);
    });

    test('a client without the refresh_token grant gets no refresh token', async () => {
      const name = unique('no-refresh');
      const created = await confidential(name, ['password']);
      const login = await request(server.url, 'POST', '/security/generate-token', {
        json: {
          grant_type: 'password',
          scope: 'api',
          client_id: name,
          client_secret: created.body.secret,
          ...SEEDED_USER,
        },
      });
      assert.equal(login.status, 200);
      assert.equal(login.body.refresh_token, undefined);
    });

    test('the last client that signs administrators in cannot go, nor lose its sign-in grants', async () => {
      const admins = (await call('GET', '/oauth-clients')).body._embedded as {
        'oauth-clients': { name: string; accounts: string }[];
      };
      // The seeded `admin` client is the only one here that signs administrators in.
      assert.deepEqual(
        admins['oauth-clients'].filter((client) => client.accounts === 'admin').map((client) => client.name),
        ['admin'],
      );
      const deleted = await call('DELETE', '/oauth-clients/admin');
      assert.equal(deleted.status, 409);
      const narrowed = await call('PATCH', '/oauth-clients/admin', { grants: ['client_credentials'] });
      assert.equal(narrowed.status, 409);
      // With another one, it can.
      const console = await registerClient(server.url, token, {
        name: unique('console'),
        type: 'public',
        accounts: 'admin',
      });
      assert.equal(
        (await call('PATCH', '/oauth-clients/admin', { grants: ['client_credentials'] })).status,
        200,
      );
      assert.equal((await call('DELETE', `/oauth-clients/${console.name}`)).status, 409);
      assert.equal(
        (
          await call('PATCH', '/oauth-clients/admin', {
            grants: ['password', 'refresh_token', 'client_credentials'],
          })
        ).status,
        200,
      );
      assert.equal((await call('DELETE', `/oauth-clients/${console.name}`)).status, 204);
    });

    /** Whether a client signs administrators in: an admin client with a sign-in grant. */
    const signsInAdmins = (client: { accountKind: string; grants: string[] }) =>
      client.accountKind === 'admin' &&
      client.grants.some((grant) => grant === 'password' || grant === 'authorization_code');

    for (const [round, change] of [
      ['delete', 'DELETE'],
      ['take away the sign-in grants of', 'PATCH'],
      ['delete or narrow', 'both'],
    ] as const) {
      test(`superusers who all at once ${round} the clients that sign administrators in leave one`, async () => {
        // Six such clients, each with a superuser token issued through it (a deleted client's
        // tokens are refused, so each request acts on another client than its own).
        const clients = await Promise.all(
          Array.from({ length: 6 }, async () => {
            const name = unique('console');
            const created = await call('POST', '/oauth-clients', {
              name,
              type: 'confidential',
              accounts: 'admin',
              grants: ['password', 'refresh_token'],
            });
            assert.equal(created.status, 201, JSON.stringify(created.body));
            const client = { client_id: name, client_secret: String(created.body.secret) };
            const login = await passwordGrant(server.url, client, SEEDED_ADMIN);
            return { name, token: login.access_token };
          }),
        );
        // The others that sign administrators in go first, so that these six are all there are.
        for (const other of (await server.app.stores.clients.list()).filter(signsInAdmins)) {
          if (clients.some((client) => client.name === other.name)) continue;
          const narrowed = await call('PATCH', `/oauth-clients/${other.name}`, {
            grants: ['client_credentials'],
          });
          assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
        }
        const answers = await Promise.all(
          clients.map(({ token }, i) => {
            const next = clients[(i + 1) % clients.length]?.name;
            const remove = change === 'DELETE' || (change === 'both' && i % 2 === 0);
            return remove
              ? request(server.url, 'DELETE', `/oauth-clients/${next}`, { token })
              : request(server.url, 'PATCH', `/oauth-clients/${next}`, {
                  token,
                  json: { grants: ['client_credentials'] },
                });
          }),
        );
        for (const answer of answers)
          assert.ok([200, 204, 401, 409].includes(answer.status), JSON.stringify(answer.body));
        const left = (await server.app.stores.clients.list()).filter(signsInAdmins);
        assert.equal(left.length >= 1, true, `none left; answers ${answers.map((a) => a.status)}`);
        // Put one back as it was, for the tests that follow.
        await call('PATCH', '/oauth-clients/admin', {
          grants: ['password', 'refresh_token', 'client_credentials'],
        });
      });
    }
  });
