/**
 * A refresh never strands a token: Redis frozen (SIGSTOP) for longer than its command timeout
 * while refreshes run over HTTP. Every client told 503 retries with the token it holds, and
 * succeeds, whichever step of the refresh the freeze caught.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Backend, onPath, startRedis } from '../support/backends.ts';
import { FRONTEND_CLIENT, passwordGrant, refreshGrant, SEEDED_USER } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const CLIENTS = 12;
/** Longer than the 2 s command timeout, so refreshes caught by it answer 503. */
const FREEZE_MS = 3000;

describe('a Redis freeze during refreshes', {
  skip: onPath('redis-server') ? false : 'redis-server not on PATH: freeze test not run',
}, () => {
  let redis: Backend;
  let server: TestServer;
  before(async () => {
    redis = await startRedis();
    server = await startTestServer({ env: { REDIS_URL: redis.url } });
  });
  after(async () => {
    await server?.close();
    await redis?.dispose();
  });

  test('every client that got 503 retries the same refresh token after it and succeeds', async () => {
    const tokens = await Promise.all(
      Array.from(
        { length: CLIENTS },
        async () => (await passwordGrant(server.url, FRONTEND_CLIENT, SEEDED_USER)).refresh_token,
      ),
    );
    let thawed!: () => void;
    const thaw = new Promise<void>((resolve) => {
      thawed = resolve;
    });
    let frozen = false;
    let running = true;
    const answers: number[] = [];
    /** What each retry after a 503 got: the status, and the reason when it was refused. */
    const retries: string[] = [];

    /** Refreshes in a loop, as a busy client would; after a 503 it waits for Redis, then retries the same token. */
    const client = async (index: number) => {
      let token = tokens[index] ?? '';
      while (running) {
        let response = await refreshGrant(server.url, FRONTEND_CLIENT, token);
        answers.push(response.status);
        if (response.status === 503) {
          await thaw;
          // As a client told "try again shortly" does: until the service has seen Redis back.
          for (let attempt = 0; attempt < 20; attempt++) {
            response = await refreshGrant(server.url, FRONTEND_CLIENT, token);
            if (response.status !== 503) break;
            await sleep(100);
          }
          retries.push(response.status === 200 ? '200' : `${response.status} ${response.body.detail}`);
        }
        if (response.status !== 200) return;
        token = String(response.body.refresh_token);
        // Stagger the clients so the freeze finds them at every step of a refresh.
        if (!frozen) await sleep(index * 3);
      }
    };

    const clients = Array.from({ length: CLIENTS }, (_, index) => client(index));
    await sleep(300);
    redis.signal('SIGSTOP');
    frozen = true;
    await sleep(FREEZE_MS);
    redis.signal('SIGCONT');
    frozen = false;
    thawed();
    await sleep(2500);
    running = false;
    await Promise.all(clients);

    assert.ok(retries.length > 0, 'the freeze caught some refreshes');
    assert.deepEqual(
      retries.filter((status) => status !== '200'),
      [],
    );
    assert.deepEqual(
      answers.filter((status) => status !== 200 && status !== 503),
      [],
    );
  });
});
