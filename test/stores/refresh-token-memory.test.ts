/**
 * What a refresh-token session costs in Redis memory: measured on a private redis-server (so
 * no other test's keys count), through the refresh-token service as the grant uses it, once
 * the retry window of the last rotations has passed (within it, each session also has its
 * retry record); and what a refresh costs in commands.
 */
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createRefreshTokenService, type RefreshTokenService } from '../../src/oauth/refresh-token.ts';
import { RedisRefreshTokenStore } from '../../src/stores/redis/refresh-tokens.ts';
import { type Backend, onPath, startRedis } from '../support/backends.ts';

const SESSIONS = 1000;
const REFRESHES = 20;
/** The target is 500 bytes; the bound leaves room for allocator noise on other machines. */
const MAX_BYTES_PER_SESSION = 600;
const MAX_GROWTH_PER_SESSION = 25;
/** Within the retry window each session also has its retry record. */
const MAX_BYTES_IN_WINDOW = 1200;
/** Short, so the measurement after the window does not wait long. */
const RETRY_SECONDS = 1;

const key = createSecretKey(randomBytes(32));
const keys = {
  current: () => ({ id: 'k1', key }),
  find: async (id: string) => (id === 'k1' ? key : undefined),
};

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

/** One refresh, as the grant does it: inspect, then redeem. */
async function refresh(service: RefreshTokenService, token: string): Promise<string> {
  const found = await service.inspectRefreshToken(token);
  if (found.state !== 'current') throw new Error(`refresh token ${found.state}`);
  const redeemed = await service.redeemRefreshToken(found.presented, found.family);
  if (redeemed.outcome !== 'rotated') throw new Error(`refresh ${redeemed.outcome}`);
  return redeemed.refreshToken;
}

/** Runs `step` on every session, a hundred at a time, and keeps what each returns. */
async function eachSession(tokens: string[], step: (token: string) => Promise<string>): Promise<void> {
  for (let i = 0; i < tokens.length; i += 100) {
    const batch = tokens.slice(i, i + 100);
    const results = await Promise.all(batch.map(step));
    tokens.splice(i, results.length, ...results);
  }
}

describe('Redis memory per refresh-token session', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: memory not measured',
}, () => {
  let server: Backend;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    await redis?.quit();
    await server?.dispose();
  });

  for (const shape of ['each session its own account', 'every session of one account'] as const) {
    test(`${SESSIONS} sessions (${shape}) after ${REFRESHES} refreshes each take a few hundred bytes each once the retry window has passed; more refreshes add nothing`, async (t) => {
      const service = createRefreshTokenService({
        store: new RedisRefreshTokenStore(redis),
        keys,
        ttlSeconds: 30 * 24 * 3600,
        retrySeconds: RETRY_SECONDS,
      });
      const account = randomUUID();
      const login = () =>
        service.issueRefreshToken({
          clientId: randomUUID(),
          accountKind: 'user',
          subject: shape === 'each session its own account' ? randomUUID() : account,
          scope: 'api',
          credentialStamp: randomBytes(16).toString('base64url'),
        });
      // Run each command once first: the script cache, and the latency histogram Redis keeps
      // for each command from its first call, are the server's, not any session's.
      await refresh(service, String(await login()));
      await redis.flushall();
      const before = await usedMemory(redis);

      const tokens = await Promise.all(Array.from({ length: SESSIONS }, async () => String(await login())));
      const keysPerSessions = await redis.dbsize();
      for (let i = 0; i < REFRESHES; i++) await eachSession(tokens, (token) => refresh(service, token));
      const inWindow = await usedMemory(redis);
      await windowPassed(redis, keysPerSessions);
      const afterRefreshes = await usedMemory(redis);
      for (let i = 0; i < REFRESHES; i++) await eachSession(tokens, (token) => refresh(service, token));
      await windowPassed(redis, keysPerSessions);
      const afterMore = await usedMemory(redis);

      const perSession = (afterRefreshes - before) / SESSIONS;
      const perSessionInWindow = (inWindow - before) / SESSIONS;
      const growth = (afterMore - afterRefreshes) / SESSIONS;
      t.diagnostic(
        `used_memory per session: ${perSessionInWindow.toFixed(0)} bytes within the retry ` +
          `window, ${perSession.toFixed(0)} bytes after it; growth over ${REFRESHES} more refreshes: ${growth.toFixed(1)} bytes`,
      );
      assert.ok(perSession <= MAX_BYTES_PER_SESSION, `${perSession} bytes per session`);
      assert.ok(
        perSessionInWindow <= MAX_BYTES_IN_WINDOW,
        `${perSessionInWindow} bytes per session in the window`,
      );
      assert.ok(growth <= MAX_GROWTH_PER_SESSION, `${growth} bytes per session over further refreshes`);
    });
  }
});

/** How often Redis has run each command since the last CONFIG RESETSTAT. */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const [, command, count] of (await redis.info('commandstats')).matchAll(
    /^cmdstat_(\w+):calls=(\d+)/gm,
  ))
    calls.set(String(command), Number(count));
  return calls;
}

describe('Redis round trips per refresh', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: round trips not counted',
}, () => {
  test('a refresh reads its family once and writes it once; the account listing only when the family outlives it', async () => {
    const server = await startRedis();
    const redis = new Redis(server.url);
    try {
      const service = createRefreshTokenService({
        store: new RedisRefreshTokenStore(redis),
        keys,
        ttlSeconds: 3600,
        retrySeconds: 60,
      });
      let token = String(
        await service.issueRefreshToken({
          clientId: 'web',
          accountKind: 'user',
          subject: randomUUID(),
          scope: 'api',
          credentialStamp: 'stamp',
        }),
      );
      await redis.config('RESETSTAT');
      const refreshes = 10;
      for (let i = 0; i < refreshes; i++) token = await refresh(service, token);
      // Commands the scripts run count too: the client's own are these, the compare-and-set a
      // script. The sign-in listed the family for an eighth of an hour beyond its expiry, so
      // these rotations, each moving the expiry on by moments, leave the listing alone.
      const calls = await commandCalls(redis);
      assert.deepEqual(
        { mget: calls.get('mget'), evalsha: calls.get('evalsha'), eval: calls.get('eval') },
        { mget: refreshes, evalsha: refreshes, eval: undefined },
      );
    } finally {
      await redis.quit();
      await server.dispose();
    }
  });
});

/** Waits until Redis has dropped the expired retry records: as many keys as the sessions alone have. */
async function windowPassed(redis: Redis, keys: number): Promise<void> {
  await sleep(RETRY_SECONDS * 1000);
  const deadline = Date.now() + 20_000;
  while ((await redis.dbsize()) > keys) {
    if (Date.now() > deadline) throw new Error(`more than ${keys} keys after the retry window`);
    await sleep(100);
  }
}
