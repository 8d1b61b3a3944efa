/**
 * How the key ring changes (src/oauth/key-rotation.ts): keys:generate replaces it only when
 * told to, a rotation signs nobody out, and retirement removes only the keys it may.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { KeyRingState } from '../../src/oauth/key-ring-store.ts';
import { generateKeys, KeyRingExists, retireKeys, rotateKeys } from '../../src/oauth/key-rotation.ts';
import { openKeyRingStore } from '../../src/services.ts';

const freshStore = () => openKeyRingStore(mkdtempSync(join(tmpdir(), 'keys-')));
const kids = (ring: KeyRingState) => ring.signing.map((key) => key.kid);
const macKeyIds = (ring: KeyRingState) => ring.refreshTokenMac.map((key) => key.id);
const HOUR = 3_600_000;

describe('generating keys', () => {
  test('keys:generate refuses to replace keys without force; with force every earlier key is gone', async () => {
    const store = freshStore();
    await generateKeys(store, { force: false });
    await rotateKeys(store);
    const before = await store.read();
    await assert.rejects(generateKeys(store, { force: false }), KeyRingExists);
    assert.deepEqual(kids(await store.read()), kids(before));
    await generateKeys(store, { force: true });
    const after = await store.read();
    assert.equal(after.signing.length, 1);
    assert.equal(after.refreshTokenMac.length, 1);
    assert.ok(!kids(before).includes(after.signing[0].kid));
    assert.ok(!macKeyIds(before).includes(after.refreshTokenMac[0].id));
  });
});

describe('rotating keys', () => {
  test('a new key signs and mints; the earlier ones keep verifying, without their private key', async () => {
    const store = freshStore();
    await generateKeys(store, { force: false });
    const first = await store.read();
    const rotated = await rotateKeys(store);
    assert.equal(rotated.generation, 2);
    assert.deepEqual(kids(rotated).slice(1), kids(first));
    assert.deepEqual(macKeyIds(rotated).slice(1), macKeyIds(first));
    assert.ok(rotated.signing[0].privateKey);
    assert.ok(rotated.signing.slice(1).every((key) => key.privateKey === undefined && key.supersededAt));
    assert.deepEqual(await store.read(), rotated);
  });
});

describe('retiring keys', () => {
  const ttl = { accessTokenTtlSeconds: 3600, refreshTokenTtlSeconds: 24 * 3600 };

  test('by default only keys whose tokens have all expired, each after its own token lifetime', async () => {
    const store = freshStore();
    await generateKeys(store, { force: false });
    const now = Date.now();
    const original = await rotateKeys(store, new Date(now - 2 * HOUR));
    const [oldSigning, oldMacKey] = [original.signing[1]?.kid, original.refreshTokenMac[1]?.id];
    await rotateKeys(store, new Date(now - HOUR / 2));

    const early = await retireKeys(store, { kind: 'expired', ...ttl, now: new Date(now) });
    assert.deepEqual(early.retired, [oldSigning], 'the access tokens of the oldest signing key expired');
    assert.equal(early.ring.signing.length, 2);
    assert.equal(early.ring.refreshTokenMac.length, 3, 'refresh tokens live a day: every refresh key stays');

    const nextDay = await retireKeys(store, {
      kind: 'expired',
      ...ttl,
      now: new Date(now + 23 * HOUR),
    });
    assert.ok(nextDay.retired.includes(oldMacKey ?? ''));
    assert.equal(nextDay.ring.signing.length, 1);
    assert.equal(nextDay.ring.refreshTokenMac.length, 2, 'superseded only 23.5 hours before');
  });

  test('nothing to retire leaves the ring as it is', async () => {
    const store = freshStore();
    await generateKeys(store, { force: false });
    await rotateKeys(store);
    const { retired, ring } = await retireKeys(store, { kind: 'expired', ...ttl });
    assert.deepEqual(retired, []);
    assert.equal(ring.generation, 2);
    assert.equal((await store.read()).generation, 2);
  });

  test('one earlier key by id, or all of them; never a current key or an unknown one', async () => {
    const store = freshStore();
    await generateKeys(store, { force: false });
    await rotateKeys(store);
    const ring = await rotateKeys(store);
    const [current, middle, oldest] = kids(ring);
    await assert.rejects(retireKeys(store, { kind: 'id', id: current ?? '' }), /is a current key/);
    await assert.rejects(
      retireKeys(store, { kind: 'id', id: ring.refreshTokenMac[0].id }),
      /is a current key/,
    );
    await assert.rejects(retireKeys(store, { kind: 'id', id: 'nope' }), /No key nope/);
    const one = await retireKeys(store, { kind: 'id', id: middle ?? '' });
    assert.deepEqual(one.retired, [middle]);
    assert.deepEqual(kids(one.ring), [current, oldest]);
    const all = await retireKeys(store, { kind: 'all' });
    assert.deepEqual(kids(all.ring), [current]);
    assert.deepEqual(macKeyIds(all.ring), [ring.refreshTokenMac[0].id]);
  });
});
