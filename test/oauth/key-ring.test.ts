/**
 * A running process follows the key ring in KEYS_DIR: after keys:rotate it signs with the new
 * key and still accepts tokens of the earlier one; after keys:retire it refuses them, also
 * those it had already verified and remembers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createAccessTokenService } from '../../src/oauth/access-token.ts';
import { openKeyRing } from '../../src/oauth/key-ring.ts';
import { generateKeys, retireKeys, rotateKeys } from '../../src/oauth/key-rotation.ts';
import { createRefreshTokenService } from '../../src/oauth/refresh-token.ts';
import { createRequestSealer } from '../../src/oauth/sealed-request.ts';
import { openKeyRingStore } from '../../src/services.ts';
import { MemoryRefreshTokenStore } from '../../src/stores/memory/refresh-tokens.ts';
import { eventually } from '../support/eventually.ts';
import {
  decodeJwtPart,
  FRONTEND_CLIENT,
  passwordGrant,
  refreshGrant,
  request,
  SEEDED_USER,
} from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('the key ring of a process', () => {
  test('follows rotation and retirement of the directory without being reopened', async () => {
    const store = openKeyRingStore(mkdtempSync(join(tmpdir(), 'ring-')));
    await generateKeys(store, { force: false });
    const ring = await openKeyRing(store, { reloadMs: 20 });
    try {
      const first = ring.signingKey();
      const firstRefresh = ring.refreshTokenMacKeys.current();
      const rotated = await rotateKeys(store);
      await eventually(() => ring.signingKey().kid === rotated.signing[0].kid, 'the new key signs');
      assert.equal(ring.refreshTokenMacKeys.current().id, rotated.refreshTokenMac[0].id);
      assert.ok(ring.verificationKey(first.kid), 'the earlier key still verifies');
      assert.deepEqual(await ring.refreshTokenMacKeys.find(firstRefresh.id), firstRefresh.key);

      await retireKeys(store, { kind: 'all' });
      await eventually(() => ring.verificationKey(first.kid) === undefined, 'the retired key is gone');
      assert.equal(await ring.refreshTokenMacKeys.find(firstRefresh.id), undefined);
      assert.equal(ring.signingKey().kid, rotated.signing[0].kid);
      assert.equal(ring.verificationKey('unknown'), undefined);
    } finally {
      ring.close();
    }
  });

  test('keeps the keys in force, and says so once, when a newer generation cannot be read', async () => {
    const store = openKeyRingStore(mkdtempSync(join(tmpdir(), 'ring-')));
    await generateKeys(store, { force: false });
    const messages: string[] = [];
    const ring = await openKeyRing(store, { reloadMs: 20, log: (message) => messages.push(message) });
    try {
      const { kid } = ring.signingKey();
      writeFileSync(join(store.location, 'keyring-2.json'), '{"signing": [');
      await eventually(() => messages.length > 0, 'the unreadable generation is reported');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(messages.length, 1, messages.join('\n'));
      assert.match(messages[0] ?? '', /keyring-2\.json is not valid JSON/);
      assert.equal(ring.signingKey().kid, kid);
    } finally {
      ring.close();
    }
  });
});

describe('processes a poll apart', () => {
  /** A process that will not look at the directory by itself during the test, and one opened after a rotation. */
  async function behindAndAhead() {
    const store = openKeyRingStore(mkdtempSync(join(tmpdir(), 'ring-')));
    await generateKeys(store, { force: false });
    const behind = await openKeyRing(store, { reloadMs: 3_600_000 });
    const rotated = await rotateKeys(store);
    const ahead = await openKeyRing(store, { reloadMs: 3_600_000 });
    const close = () => {
      behind.close();
      ahead.close();
    };
    return { behind, ahead, rotated, close };
  }

  test('what a process already on the newer ring made is accepted by one that has not polled since', async () => {
    const { behind, ahead, rotated, close } = await behindAndAhead();
    try {
      const tokens = (keys: typeof ahead) =>
        createAccessTokenService({ keys, algorithm: 'RS256', issuer: 'x', audience: 'x', ttlSeconds: 60 });
      const { token } = await tokens(ahead).issueAccessToken({
        subject: { kind: 'client', id: 'svc' },
        clientId: 'svc',
        scope: 'api',
      });
      assert.equal(decodeJwtPart(token, 0).kid, rotated.signing[0].kid);
      assert.equal((await tokens(behind).verifyAccessToken(token)).clientId, 'svc');
      assert.equal(
        behind.signingKey().kid,
        rotated.signing[0].kid,
        'and it signs with the new key from then on',
      );

      const sealed = createRequestSealer({ keys: ahead.refreshTokenMacKeys, ttlSeconds: 60 }).seal({
        clientName: 'web',
        redirectUri: 'https://app.example/cb',
        scope: 'api',
        state: null,
        codeChallenge: 'c'.repeat(43),
      });
      const opened = await createRequestSealer({ keys: behind.refreshTokenMacKeys, ttlSeconds: 60 }).open(
        sealed,
      );
      assert.equal(opened?.clientName, 'web');
    } finally {
      close();
    }
  });

  test('a refresh token minted under the newer ring is redeemed by a process that has not polled since', async () => {
    const { behind, ahead, rotated, close } = await behindAndAhead();
    try {
      const store = new MemoryRefreshTokenStore();
      const refreshTokens = (keys: typeof ahead) =>
        createRefreshTokenService({
          store,
          keys: keys.refreshTokenMacKeys,
          ttlSeconds: 60,
          retrySeconds: 60,
        });
      const token = await refreshTokens(ahead).issueRefreshToken({
        clientId: 'web',
        accountKind: 'user',
        subject: 'someone',
        scope: 'api',
        credentialStamp: '',
      });
      assert.equal(token?.split('.')[2], rotated.refreshTokenMac[0].id);
      const found = await refreshTokens(behind).inspectRefreshToken(token ?? '');
      assert.equal(found.state, 'current');
      if (found.state !== 'current') return;
      const redeemed = await refreshTokens(behind).redeemRefreshToken(found.presented, found.family);
      assert.equal(redeemed.outcome, 'rotated');
    } finally {
      close();
    }
  });

  test('a key id no generation has is refused, the ring in force kept', async () => {
    const { behind, ahead, close } = await behindAndAhead();
    try {
      assert.equal(await ahead.findVerificationKey('unknown'), undefined);
      assert.equal(await ahead.refreshTokenMacKeys.find('unknown'), undefined);
      assert.ok(await behind.findVerificationKey(ahead.signingKey().kid));
    } finally {
      close();
    }
  });
});

describe('access tokens across a rotation (one process)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const read = (token: string) =>
    request(server.url, 'GET', `/users/${decodeJwtPart(token, 1).sub}`, { token });
  const issue = async () => (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).access_token;

  test('old tokens keep working after keys:rotate, new ones carry the new kid, keys:retire refuses the old', async () => {
    const old = await issue();
    assert.equal((await read(old)).status, 200, 'verified once, so the process remembers it');
    const rotated = await rotateKeys(openKeyRingStore(server.keysDir));
    const newKid = rotated.signing[0].kid;
    assert.notEqual(decodeJwtPart(old, 0).kid, newKid);

    let fresh = '';
    await eventually(async () => {
      fresh = await issue();
      return decodeJwtPart(fresh, 0).kid === newKid;
    }, 'new tokens carry the new kid');
    assert.equal((await read(old)).status, 200);
    assert.equal((await read(fresh)).status, 200);

    await retireKeys(openKeyRingStore(server.keysDir), { kind: 'all' });
    await eventually(async () => (await read(old)).status === 401, 'the retired key is refused');
    const refused = await read(old);
    assert.equal(refused.body.error, 'invalid_token');
    assert.match(String(refused.body.detail), /signing key is not trusted/);
    assert.equal((await read(fresh)).status, 200);
  });
});

describe('refresh tokens across a rotation of the refresh-token key (one process)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const login = async () => (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).refresh_token;
  /** The id of the key a refresh token's MAC was made with. */
  const keyIdOf = (token: string) => token.split('.')[2];

  test('a token made before keys:rotate still refreshes after it; after keys:retire it is refused', async () => {
    const [refreshed, retired] = [await login(), await login()];
    const rotated = await rotateKeys(openKeyRingStore(server.keysDir));
    const newKeyId = rotated.refreshTokenMac[0].id;
    assert.notEqual(keyIdOf(refreshed), newKeyId);
    await eventually(async () => keyIdOf(await login()) === newKeyId, 'new tokens carry the new key id');

    const response = await refreshGrant(server.url, FRONTEND_CLIENT, refreshed);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(keyIdOf(String(response.body.refresh_token)), newKeyId);

    await retireKeys(openKeyRingStore(server.keysDir), { kind: 'all' });
    await eventually(
      async () => (await refreshGrant(server.url, FRONTEND_CLIENT, retired)).status === 400,
      'a token under the retired key is refused',
    );
    assert.equal(
      (await refreshGrant(server.url, FRONTEND_CLIENT, String(response.body.refresh_token))).status,
      200,
    );
  });
});
