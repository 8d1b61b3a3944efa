/**
 * How much work one avatar request does while other requests for the same avatar keep
 * changing it: counted in store operations, never timed. Before each operation the watched
 * request makes on the avatar store, an adversary completes a request of its own that turns
 * the image over (a removal when there is one, an upload when there is none): the most
 * another client can do between two steps, and what a request that reads the image twice and
 * compares would see differ every time.
 */
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { createAvatars } from '../../src/accounts/avatars.ts';
import type { Actor } from '../../src/caller.ts';
import { MemoryAccountStore } from '../../src/stores/memory/accounts.ts';
import { MemoryAvatarStore } from '../../src/stores/memory/avatars.ts';
import { accountRecord } from '../support/accounts.ts';
import { png } from '../support/images.ts';

/** Replaces every method of `store` with one that calls `before` first. */
function intercept(store: object, before: (method: string) => Promise<void>): void {
  let prototype: object | null = Object.getPrototypeOf(store);
  const target = store as Record<string, unknown>;
  while (prototype && prototype !== Object.prototype) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const method = target[name];
      if (name === 'constructor' || typeof method !== 'function' || Object.hasOwn(store, name)) continue;
      target[name] = async (...args: unknown[]) => {
        await before(name);
        return Reflect.apply(method, store, args);
      };
    }
    prototype = Object.getPrototypeOf(prototype);
  }
}

for (const watched of ['upload', 'removal'] as const)
  test(`an ${watched} does a bounded number of store operations however many changes other requests make meanwhile`, async () => {
    const users = new MemoryAccountStore();
    const avatarStore = new MemoryAvatarStore();
    const account = accountRecord({
      identity: `settling-${randomUUID()}@example.com`,
      passwordHash: 'unused',
    });
    await users.create(account);
    const avatars = createAvatars({
      users,
      avatars: avatarStore,
      limits: { bytes: 1 << 20, pixels: 1 << 20, side: 512 },
    });
    const actor: Actor = { role: 'user', account };
    const upload = (n: number) => avatars.replace(actor, 'own', async () => png(1 + (n % 3), 1));

    const who = new AsyncLocalStorage<'watched' | 'adversary'>();
    const ADVERSARY_REQUESTS = 60;
    let adversaryRequests = 0;
    const operations: string[] = [];
    const count = async (method: string) => {
      if (who.getStore() === 'watched') operations.push(method);
    };
    intercept(users, count);
    intercept(avatarStore, async (method) => {
      await count(method);
      if (who.getStore() !== 'watched' || adversaryRequests >= ADVERSARY_REQUESTS) return;
      const n = adversaryRequests++;
      const turnOver = async () =>
        (await avatarStore.find(account.id)) ? avatars.remove(actor, 'own') : upload(n);
      await who.run('adversary', turnOver);
    });

    if (watched === 'removal') await upload(0);
    await who.run('watched', () => (watched === 'upload' ? upload(1) : avatars.remove(actor, 'own')));

    // The change, the flag, one look at each store, and at most one more write of the flag.
    assert.ok(operations.length <= 5, `${operations.length} operations: ${operations.join(', ')}`);
    const image = await avatarStore.find(account.id);
    assert.equal((await users.findById(account.id))?.hasAvatar, image !== null);
  });
