/**
 * Check everything, then redeem once: every refusal of a grant leaves the refresh token or
 * the authorization code it was presented with usable. Each suite presents one token or code
 * to every refusal in turn, and then redeems it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Account, AccountStore } from '../../src/accounts/model.ts';
import { BackendUnavailable, NotReplicated } from '../../src/errors.ts';
import type { RefreshTokenStore } from '../../src/oauth/model.ts';
import { PASSWORD, storeAccount } from '../accounts/fixtures.ts';
import {
  authorizationCode,
  exchangeCode,
  pkce,
  type RegisteredClient,
  registerClient,
  SPA_REDIRECT,
  superuserToken,
} from '../support/authorization.ts';
import { FRONTEND_CLIENT, type JsonResponse, passwordGrant, request, SEEDED_USER } from '../support/http.ts';
import { backends, startTestServer, type TestServer } from '../support/server.ts';

/** A refusal: what is sent, and the status and error it must get. */
interface Refusal {
  name: string;
  expect: { status: number; error: string };
  send(): Promise<JsonResponse>;
}

/** Sends each refusal, checking its answer. */
async function refuseEach(refusals: Refusal[]): Promise<void> {
  for (const refusal of refusals) {
    const response = await refusal.send();
    assert.equal(response.status, refusal.expect.status, `${refusal.name}: ${JSON.stringify(response.body)}`);
    assert.equal(response.body.error, refusal.expect.error, refusal.name);
  }
}

/** Runs `send` while the account's stored state is changed, then puts the account back as it was. */
async function withAccountChanged(
  accounts: AccountStore,
  account: Account,
  changes: Partial<Account>,
  send: () => Promise<JsonResponse>,
): Promise<JsonResponse> {
  await accounts.update(account.id, changes);
  try {
    return await send();
  } finally {
    await accounts.update(account.id, { passwordHash: account.passwordHash, status: account.status });
  }
}

/** Runs `send` while `object[name]` is what `replace` makes of it, then puts it back. */
async function withReplaced<T extends object, K extends keyof T, R>(
  object: T,
  name: K,
  replace: (original: T[K]) => T[K],
  send: () => Promise<R>,
): Promise<R> {
  const original = object[name];
  object[name] = replace(original);
  try {
    return await send();
  } finally {
    object[name] = original;
  }
}

/** Runs `send` while the account store is unreachable. */
function withAccountsDown(accounts: AccountStore, send: () => Promise<JsonResponse>) {
  return withReplaced(
    accounts,
    'findById',
    () => async () => {
      throw new BackendUnavailable('MongoDB');
    },
    send,
  );
}

/**
 * Runs `send` while the refresh-token store fails every new family as replicas do: refused
 * before it is written when they are known to be short, or (`written`) written and then not
 * confirmed in time.
 */
function withNewFamiliesFailing(
  families: RefreshTokenStore,
  { written }: { written: boolean },
  send: () => Promise<JsonResponse>,
) {
  return withReplaced(
    families,
    'create',
    (create) => async (family, first) => {
      if (written) await create.call(families, family, first);
      throw new NotReplicated('Redis');
    },
    send,
  );
}

const INVALID_GRANT = { status: 400, error: 'invalid_grant' };
const INVALID_SCOPE = { status: 400, error: 'invalid_scope' };
const INVALID_CLIENT = { status: 401, error: 'invalid_client' };
const UNAVAILABLE = { status: 503, error: 'temporarily_unavailable' };

for (const backend of backends())
  describe(`a refused grant uses nothing up (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
      await server.app.stores.scopes.createIfAbsent({ name: 'other', description: 'A second scope' });
    });
    after(() => server.close());

    test('refresh token: wrong client secret, unregistered or wider scope, ended session, inactive account, outage', async () => {
      const users = server.app.stores.users;
      const account = await users.findByIdentity(SEEDED_USER.username);
      assert.ok(account);
      const { refresh_token } = await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER);
      const refresh = (overrides: Record<string, string> = {}) =>
        request(server.url, 'POST', '/security/refresh-token', {
          json: { grant_type: 'refresh_token', refresh_token, ...FRONTEND_CLIENT, ...overrides },
        });

      await refuseEach([
        {
          name: 'wrong client secret',
          expect: INVALID_CLIENT,
          send: () => refresh({ client_secret: 'nope' }),
        },
        { name: 'unregistered scope', expect: INVALID_SCOPE, send: () => refresh({ scope: 'unknown' }) },
        { name: 'wider scope', expect: INVALID_SCOPE, send: () => refresh({ scope: 'api other' }) },
        {
          name: 'ended session',
          expect: INVALID_GRANT,
          send: () =>
            withAccountChanged(users, account, { passwordHash: `${account.passwordHash}-changed` }, refresh),
        },
        {
          name: 'inactive account',
          expect: INVALID_GRANT,
          send: () => withAccountChanged(users, account, { status: 'inactive' }, refresh),
        },
        { name: 'account store outage', expect: UNAVAILABLE, send: () => withAccountsDown(users, refresh) },
      ]);
      const redeemed = await refresh();
      assert.equal(redeemed.status, 200, JSON.stringify(redeemed.body));
    });

    describe('authorization code', () => {
      const OTHER_REDIRECT = 'https://app.example.test/other';
      let superuser: string;
      let spa: RegisteredClient;
      let web: RegisteredClient;
      let account: Account;
      before(async () => {
        superuser = await superuserToken(server.url);
        spa = await registerClient(server.url, superuser, { name: `spa-${randomUUID()}`, type: 'public' });
        web = await registerClient(server.url, superuser, {
          name: `web-${randomUUID()}`,
          type: 'confidential',
          redirectUris: [SPA_REDIRECT, OTHER_REDIRECT],
        });
        account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
          identity: `${randomUUID()}@example.com`,
        });
      });

      /** Runs `send` while the client registers only OTHER_REDIRECT, then registers both again. */
      async function withRedirectDropped(send: () => Promise<JsonResponse>): Promise<JsonResponse> {
        const register = async (redirectUris: string[]) => {
          const changed = await request(server.url, 'PATCH', `/oauth-clients/${web.name}`, {
            token: superuser,
            json: { redirectUris },
          });
          assert.equal(changed.status, 200, JSON.stringify(changed.body));
        };
        await register([OTHER_REDIRECT]);
        try {
          return await send();
        } finally {
          await register([SPA_REDIRECT, OTHER_REDIRECT]);
        }
      }

      test('wrong client, wrong secret, PKCE mismatch, unknown or dropped redirect URI, ended session, outage', async () => {
        const users = server.app.stores.users;
        const { verifier, challenge } = pkce();
        const code = await authorizationCode(server.url, web.name, challenge, {
          username: account.identity,
          password: PASSWORD,
        });
        const asWeb = { client_id: web.name, client_secret: web.secret ?? '', code, code_verifier: verifier };
        const exchange = (overrides: Record<string, string> = {}) =>
          exchangeCode(server.url, { ...asWeb, ...overrides });

        await refuseEach([
          {
            name: 'another client',
            expect: INVALID_GRANT,
            send: () => exchangeCode(server.url, { client_id: spa.name, code, code_verifier: verifier }),
          },
          {
            name: 'wrong client secret',
            expect: INVALID_CLIENT,
            send: () => exchange({ client_secret: 'nope' }),
          },
          {
            name: 'PKCE mismatch',
            expect: INVALID_GRANT,
            send: () => exchange({ code_verifier: pkce().verifier }),
          },
          {
            name: 'unknown redirect URI',
            expect: INVALID_GRANT,
            send: () => exchange({ redirect_uri: 'https://elsewhere.example.test/callback' }),
          },
          {
            name: 'redirect URI the client no longer registers',
            expect: INVALID_GRANT,
            send: () => withRedirectDropped(exchange),
          },
          {
            name: 'ended session',
            expect: INVALID_GRANT,
            send: () =>
              withAccountChanged(
                users,
                account,
                { passwordHash: `${account.passwordHash}-changed` },
                exchange,
              ),
          },
          {
            name: 'account store outage',
            expect: UNAVAILABLE,
            send: () => withAccountsDown(users, exchange),
          },
          {
            // Refused once the code was used up: the code goes back for the retry.
            name: 'new session refused by the refresh-token store',
            expect: UNAVAILABLE,
            send: () => withNewFamiliesFailing(server.app.stores.refreshTokens, { written: false }, exchange),
          },
        ]);
        const redeemed = await exchange();
        assert.equal(redeemed.status, 200, JSON.stringify(redeemed.body));
        const refreshed = await request(server.url, 'POST', '/security/refresh-token', {
          form: {
            grant_type: 'refresh_token',
            refresh_token: String(redeemed.body.refresh_token),
            client_id: web.name,
            client_secret: web.secret ?? '',
          },
        });
        assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
        const replayed = await exchange();
        assert.equal(replayed.status, 400, JSON.stringify(replayed.body));
        assert.equal(replayed.body.error_description, 'Authorization code already used');
        const afterReplay = await request(server.url, 'POST', '/security/refresh-token', {
          form: {
            grant_type: 'refresh_token',
            refresh_token: String(refreshed.body.refresh_token),
            client_id: web.name,
            client_secret: web.secret ?? '',
          },
        });
        assert.equal(afterReplay.status, 400, 'the replay revoked the session');
      });

      test('a retry after a failure that wrote the new session counts as a second presentation', async () => {
        const { verifier, challenge } = pkce();
        const code = await authorizationCode(server.url, web.name, challenge, {
          username: account.identity,
          password: PASSWORD,
        });
        const exchange = () =>
          exchangeCode(server.url, {
            client_id: web.name,
            client_secret: web.secret ?? '',
            code,
            code_verifier: verifier,
          });
        const families = server.app.stores.refreshTokens;
        const failed = await withNewFamiliesFailing(families, { written: true }, exchange);
        assert.equal(failed.status, 503, JSON.stringify(failed.body));
        const revoked: string[] = [];
        const retried = await withReplaced(
          families,
          'revokeFamily',
          (revokeFamily) => async (familyId) => {
            revoked.push(familyId);
            await revokeFamily.call(families, familyId);
          },
          exchange,
        );
        assert.equal(retried.status, 400, JSON.stringify(retried.body));
        assert.equal(retried.body.error_description, 'Authorization code already used');
        assert.equal(revoked.length, 1, 'the session the failed presentation wrote is revoked');
      });
    });
  });
