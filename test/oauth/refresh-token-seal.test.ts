import assert from 'node:assert/strict';
import { createDecipheriv, createSecretKey, hkdfSync, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createRefreshTokenService } from '../../src/oauth/refresh-token.ts';
import { MemoryRefreshTokenStore } from '../../src/stores/memory/refresh-tokens.ts';

/**
 * The retry record's seal is a stored format: a node still running the previous release may
 * read a record this one wrote within the window, and the other way round. It is AES-256-GCM
 * under HKDF-SHA-256 (RFC 5869, no salt, info `refresh-token retry`) of the replaced token,
 * its nonce first and its tag last, the family id and both generations as associated data.
 */
test('a retry record opens with RFC 5869 HKDF of the replaced token, as it always has', async () => {
  const store = new MemoryRefreshTokenStore();
  const key = createSecretKey(randomBytes(32));
  const service = createRefreshTokenService({
    store,
    keys: { current: () => ({ id: 'k1', key }), find: async (id) => (id === 'k1' ? key : undefined) },
    ttlSeconds: 3600,
    retrySeconds: 60,
  });
  const first = await service.issueRefreshToken({
    clientId: 'client',
    accountKind: 'user',
    subject: 'someone',
    scope: 'api',
    credentialStamp: 'stamp',
  });
  assert.ok(first);
  const inspected = await service.inspectRefreshToken(first);
  assert.equal(inspected.state, 'current');
  if (inspected.state !== 'current') return;
  const redeemed = await service.redeemRefreshToken(inspected.presented, inspected.family);
  assert.equal(redeemed.outcome, 'rotated');
  if (redeemed.outcome !== 'rotated') return;

  const { familyId, generation } = inspected.presented;
  const record = await store.inspect(familyId, inspected.presented);
  assert.equal(record.state, 'retry');
  if (record.state !== 'retry') return;
  const sealed = Buffer.from(record.sealedSuccessor, 'base64url');
  const decipher = createDecipheriv(
    'aes-256-gcm',
    Buffer.from(hkdfSync('sha256', first, '', 'refresh-token retry', 32)),
    sealed.subarray(0, 12),
  )
    .setAAD(Buffer.from(`${familyId}.${generation}.${generation + 1}`))
    .setAuthTag(sealed.subarray(sealed.length - 16));
  const rest = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
  assert.equal(`${familyId}.${generation + 1}.${rest.toString('utf8')}`, redeemed.refreshToken);
});
