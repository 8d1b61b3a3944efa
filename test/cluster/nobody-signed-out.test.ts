/**
 * Nobody is signed out by accident, and every thief is caught: simulated clients refresh for
 * a bounded time against two service instances (each a cluster of two workers) over Redis
 * with Sentinel and MongoDB (FerretDB), through a proxy that drops a share of the refresh
 * answers after the server gave them, while, in turn: the replica stops receiving (frozen
 * with SIGSTOP, its link dropped by the primary), so that what the primary accepts from then
 * on exists there alone; the primary is killed with SIGKILL and Sentinel promotes that
 * replica, which missed it, and which then has no replica of its own for longer than the
 * retry window (so rotations cannot be confirmed and are answered 503); both instances
 * restart one after the other, `keys:rotate` runs, and the clients' secret is rotated with an
 * overlap. Every honest client retries as a standard client does (on a network error or a
 * 503, with the same token); pairs of tabs share a token and refresh it together. Every
 * successor answered 200 while the replica was cut off must still work after the promotion:
 * without replica acknowledgements those answers die with the primary, and this test fails
 * (`NOBODY_SIGNED_OUT_REPLICA_ACKS=0` runs the instances with `REDIS_MIN_REPLICA_ACKS=0` to
 * show it). Scripted thieves, before the outage and after it, through the proxy, replay a
 * token right after its successor was used, after the window, again and again within the
 * window while its holder goes on, or present one from another client: each family must be
 * revoked, and only those.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { runCli } from '../cli/run-cli.ts';
import {
  type Backend,
  freePort,
  onPath,
  type SentinelSetup,
  startFerretDb,
  startRedis,
  startSentinelSetup,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import { ADMIN_CLIENT, FRONTEND_CLIENT, SEEDED_USER } from '../support/http.ts';
import {
  type RawResponse,
  type ServiceProcess,
  send,
  spawnService,
  waitForHttp,
} from '../support/processes.ts';

/**
 * Short, so that the thieves after the window are quick to script; longer, with a margin, than
 * what a retry must outlast here, as the default of 60 s does in production: from the last
 * answer before the replica is cut off, the gap, the Sentinels' failover (about 3 s here: 1 s
 * to see the primary down, then the election), the instances' reconnection and a client's
 * back-off. With 6 s, a tab answered just before the gap sometimes came back to the promoted
 * replica after its twin's window, and reuse detection signed it out, as it must.
 */
const RETRY_SECONDS = 15;
/** Share of refresh answers the proxy drops after the server gave them. */
const DROP_SHARE = 0.12;
const SINGLE_CLIENTS = 8;
const TAB_PAIRS = 3;
/** How long one refresh of a standard client keeps retrying before it gives up. */
const GIVE_UP_MS = 60_000;
/** How long the primary accepts writes that the replica it fails over to never receives. */
const GAP_MS = 1500;
/**
 * `REDIS_MIN_REPLICA_ACKS` for the instances, to check the test itself: with 0 (no `WAIT`),
 * rotations answered in the gap are lost at the failover and the test must fail. Unset, the
 * instances use their default (1 with Sentinel), which is what is under test.
 */
const REPLICA_ACKS = process.env.NOBODY_SIGNED_OUT_REPLICA_ACKS;

function missingBackend(): string | false {
  const reason = !onPath('redis-server')
    ? 'redis-server is not on PATH'
    : !process.env.MONGODB_URL && !onPath('ferretdb')
      ? 'neither MONGODB_URL nor a ferretdb on PATH (the two instances share their accounts)'
      : '';
  if (!reason) return false;
  console.log(`# nobody signed out: not run: ${reason}`);
  return reason;
}
const skip = missingBackend();

/** What the run did, printed at the end. */
const counts = {
  honestRefreshes: 0,
  tabRounds: 0,
  retries: 0,
  networkErrors: 0,
  unavailable: 0,
  dropped: 0,
  proxiedConnections: 0,
  noInstance: 0,
  /** Refreshes answered 503 while the replica was cut off (the primary alone had them). */
  gapUnavailable: 0,
  /** Successors answered 200 while the replica was cut off. */
  gapAnswered: 0,
  /** Of those, the ones their holder then used successfully after the promotion. */
  gapSurvived: 0,
  /** Bytes of replication stream the primary accepted that the promoted replica never got. */
  replicationMissed: 0,
  /** A thief's replay within the window answered with the holder's own successor. */
  thiefRetriesAnswered: 0,
  thieves: 0,
  thievesCaught: 0,
};

interface Proxy {
  url: string;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of the instances, as a load balancer: each connection goes to the next
 * instance, or to the other one while that one does not accept. A share of the refresh
 * requests (one per connection: the test's requests never keep a connection alive) has its
 * answer swallowed once the server has started sending it, and the connection reset.
 */
async function startProxy(ports: readonly number[]): Promise<Proxy> {
  let next = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    counts.proxiedConnections++;
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    const first = next++ % ports.length;
    const order = ports.map((_, i) => ports[(first + i) % ports.length] ?? 0);
    const tryNext = (index: number) => {
      const port = order[index];
      if (port === undefined) {
        counts.noInstance++;
        client.destroy();
        return;
      }
      const upstream = connect(port, '127.0.0.1');
      sockets.add(upstream);
      upstream.once('close', () => sockets.delete(upstream));
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        relay(client, upstream);
      });
      upstream.on('error', () => {
        if (connected) client.destroy();
        else tryNext(index + 1);
      });
    };
    tryNext(0);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function relay(client: Socket, upstream: Socket): void {
  let drop: boolean | undefined;
  client.on('data', (chunk: Buffer) => {
    drop ??=
      chunk.toString('latin1').startsWith('POST /security/refresh-token') && Math.random() < DROP_SHARE;
    upstream.write(chunk);
  });
  client.on('end', () => upstream.end());
  client.once('close', () => upstream.destroy());
  upstream.on('data', (chunk: Buffer) => {
    if (drop) {
      // The server answered; the answer never reaches the client.
      counts.dropped++;
      drop = false;
      client.destroy();
      upstream.destroy();
      return;
    }
    client.write(chunk);
  });
  upstream.on('end', () => client.end());
  upstream.once('close', () => client.destroy());
  client.resume();
}

/** One service instance on a fixed port, so that it can be restarted there. */
interface Instance {
  port: number;
  url: string;
  service?: ServiceProcess;
}

describe('nobody is signed out by accident, every thief is caught', { skip }, () => {
  let root: string;
  let keysDir: string;
  let sentinel: SentinelSetup;
  let ferret: Backend | undefined;
  let freshReplica: Backend | undefined;
  let mongodbUrl: string;
  let proxy: Proxy;
  const instances: Instance[] = [];

  async function start(instance: Instance): Promise<void> {
    const service = spawnService({
      cwd: root,
      env: {
        HOST: '127.0.0.1',
        PORT: String(instance.port),
        WORKERS: '2',
        SHUTDOWN_GRACE: '5',
        KEYS_DIR: keysDir,
        LOG_DIR: join(root, `log-${instance.port}`),
        BCRYPT_COST: '4',
        MONGODB_URL: mongodbUrl,
        REDIS_URL: sentinel.url,
        REFRESH_TOKEN_RETRY_SECONDS: String(RETRY_SECONDS),
        REDIS_REPLICA_ACK_TIMEOUT_MS: '300',
        ...(REPLICA_ACKS === undefined ? {} : { REDIS_MIN_REPLICA_ACKS: REPLICA_ACKS }),
      },
    });
    instance.service = service;
    await waitForHttp(service.url, { service });
    await service.waitForRecord((record) => String(record.msg).startsWith('All 2 worker(s) serving'));
  }

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'nobody-signed-out-'));
    keysDir = join(root, 'keys');
    const [setup, mongo] = await Promise.all([
      startSentinelSetup(),
      process.env.MONGODB_URL ? undefined : startFerretDb(),
    ]);
    sentinel = setup;
    ferret = mongo;
    mongodbUrl = withDatabase(process.env.MONGODB_URL ?? ferret?.url ?? '', uniqueName('nobody'));
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      instances.push({ port, url: `http://127.0.0.1:${port}` });
    }
    // One after the other: the first creates the key ring and seeds the database.
    for (const instance of instances) await start(instance);
    proxy = await startProxy(instances.map(({ port }) => port));
  });

  after(async () => {
    await proxy?.close();
    await Promise.all(instances.map((instance) => instance.service?.stop()));
    await Promise.all([sentinel?.dispose(), ferret?.dispose(), freshReplica?.dispose()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The secret the clients send: switched to the new one once it is rolled out. */
  let clientSecret = FRONTEND_CLIENT.client_secret;

  /**
   * Where the run is: `gap` while the replica is cut off and the primary alone has what it
   * accepts, `outage` from the kill until a replica confirms writes again.
   */
  let phase: 'calm' | 'gap' | 'outage' | 'after' = 'calm';

  /**
   * The successors answered 200 during the gap, each with whether its holder then redeemed it
   * in the gap (which hands the proof on to that redemption's successor, also in here) or
   * after the kill (which proves it survived the failover).
   */
  const gapAnswers = new Map<string, { redeemedInGap: boolean; redeemedAfter: boolean }>();

  let startedAt = Date.now();
  /** When, in the run and its phases, for the story of a failure. */
  const now = () => `+${((Date.now() - startedAt) / 1000).toFixed(1)} s (${phase})`;
  /** When each honest holder's token was handed out, and after how many attempts. */
  const handedOut = new Map<string, string>();
  /** The run's turns, with when they happened. */
  const timeline: string[] = [];

  /**
   * `attempt` as a standard client makes it: again, unchanged, after a network error or a 503,
   * with back-off; the first other answer is the outcome.
   */
  async function asClient(attempt: () => Promise<RawResponse>): Promise<RawResponse> {
    const deadline = Date.now() + GIVE_UP_MS;
    for (let tries = 0; ; tries++) {
      try {
        const response = await attempt();
        if (response.status !== 503) return response;
        counts.unavailable++;
        if (phase === 'gap') counts.gapUnavailable++;
      } catch (error) {
        counts.networkErrors++;
        if (Date.now() > deadline) throw error;
      }
      if (Date.now() > deadline) throw new Error(`still 503 after ${GIVE_UP_MS} ms`);
      counts.retries++;
      await sleep(Math.min(1000, 50 * 2 ** tries));
    }
  }

  const tokenRequest = (url: string, path: string, json: Record<string, string>) => () =>
    send(`${url}${path}`, { method: 'POST', json, timeoutMs: 10_000 });

  async function signIn(): Promise<string> {
    const response = await asClient(
      tokenRequest(proxy.url, '/security/generate-token', {
        grant_type: 'password',
        scope: 'api',
        client_id: FRONTEND_CLIENT.client_id,
        client_secret: clientSecret,
        ...SEEDED_USER,
      }),
    );
    assert.equal(response.status, 200, response.text);
    return String(response.json().refresh_token);
  }

  /** A refresh by the token's honest holder, through the proxy. */
  async function refresh(token: string): Promise<RawResponse> {
    const request = tokenRequest(proxy.url, '/security/refresh-token', {
      grant_type: 'refresh_token',
      scope: 'api',
      client_id: FRONTEND_CLIENT.client_id,
      client_secret: clientSecret,
      refresh_token: token,
    });
    let sentIn = phase;
    let attempts = 0;
    const response = await asClient(() => {
      sentIn = phase;
      attempts++;
      return request();
    });
    if (response.status === 200) {
      const gapped = gapAnswers.get(token);
      if (gapped && sentIn === 'gap') gapped.redeemedInGap = true;
      else if (gapped) gapped.redeemedAfter = true;
      const successor = String(response.json().refresh_token);
      handedOut.set(successor, `${now()} after ${attempts} attempt(s)`);
      if (phase === 'gap' && !gapAnswers.has(successor))
        gapAnswers.set(successor, { redeemedInGap: false, redeemedAfter: false });
    }
    return response;
  }

  /** The successor an honest refresh got; throws with the refusal otherwise. */
  async function refreshed(token: string): Promise<string> {
    const response = await refresh(token);
    if (response.status !== 200)
      throw new Error(
        `${response.status} ${String(response.json().error_description)} at ${now()}, for the token ` +
          `handed out ${handedOut.get(token) ?? 'at sign-in'}`,
      );
    return String(response.json().refresh_token);
  }

  /** A thief's presentation, through the proxy as everyone's, as `client`; retried until it is not 503. */
  function present(token: string, client: { client_id: string; client_secret: string }) {
    return asClient(
      tokenRequest(proxy.url, '/security/refresh-token', {
        grant_type: 'refresh_token',
        scope: 'api',
        ...client,
        refresh_token: token,
      }),
    );
  }

  test('while answers are lost, tabs race, Redis fails over, instances restart and keys and secrets rotate', {
    timeout: 180_000,
  }, async (t) => {
    startedAt = Date.now();
    let stopping = false;
    /** Why each honest client that was signed out (or refused) was. */
    const failures: string[] = [];

    async function single(name: string): Promise<string> {
      let token = await signIn();
      while (!stopping) {
        try {
          token = await refreshed(token);
          counts.honestRefreshes++;
        } catch (error) {
          failures.push(`${name}: ${(error as Error).message}`);
          return token;
        }
        await sleep(50 + Math.random() * 150);
      }
      return token;
    }

    /** Two tabs of one app: one token, refreshed by both at the same moment. */
    async function tabs(name: string): Promise<string> {
      let token = await signIn();
      while (!stopping) {
        const answers = await Promise.allSettled([refreshed(token), refreshed(token)]);
        const [a, b] = answers;
        if (a?.status !== 'fulfilled' || b?.status !== 'fulfilled' || a.value !== b.value) {
          // What each tab got, without the tokens themselves.
          const got = answers.map((answer) =>
            answer.status === 'fulfilled' ? 'a successor' : `refused: ${(answer.reason as Error).message}`,
          );
          failures.push(
            `${name}: the tabs got ${got.join(' and ')}${got[0] === got[1] ? ', not the same' : ''}`,
          );
          return token;
        }
        token = a.value;
        counts.tabRounds++;
        counts.honestRefreshes += 2;
        await sleep(50 + Math.random() * 150);
      }
      return token;
    }

    const singles = Array.from({ length: SINGLE_CLIENTS }, (_, i) => `client ${i + 1}`);
    const pairs = Array.from({ length: TAB_PAIRS }, (_, i) => `tabs ${i + 1}`);
    const honest = [...singles.map(single), ...pairs.map(tabs)];

    const gapStarted = Promise.withResolvers<void>();
    const outageOver = Promise.withResolvers<void>();

    /** A thief's last replay, the token its honest holder presents afterwards, and what went wrong before. */
    interface Theft {
      thief: string;
      replay: RawResponse;
      holdersLaterToken: string;
      problems: string[];
      detail?: string;
    }

    /** A family of the theft's own, a few generations on, so that no token replayed is its first. */
    async function family(): Promise<string> {
      let token = await signIn();
      for (let i = 0; i < 2; i++) token = await refreshed(token);
      return token;
    }

    /** A family one of whose refreshes is sent in the gap, so that it spans the failover. */
    async function throughOutage(): Promise<string> {
      let token = await family();
      await gapStarted.promise;
      token = await refreshed(token);
      await outageOver.promise;
      return token;
    }

    /** The holder refreshes, then uses the successor; the token it replaced comes back at once. */
    async function afterSuccessorUsed(thief: string, stolen: string): Promise<Theft> {
      const successor = await refreshed(stolen);
      const handedOut = Date.now();
      const later = await refreshed(successor);
      const replay = await present(stolen, FRONTEND_CLIENT);
      return {
        thief,
        replay,
        holdersLaterToken: later,
        problems: [],
        detail: `replayed ${Date.now() - handedOut} ms after its successor was handed out`,
      };
    }

    /** The holder refreshes and holds its successor; the token it replaced comes back after the window. */
    async function afterWindow(thief: string, stolen: string): Promise<Theft> {
      const successor = await refreshed(stolen);
      // From the answer the holder got: the server's window started no later.
      await sleep(RETRY_SECONDS * 1000 + 1500);
      return {
        thief,
        replay: await present(stolen, FRONTEND_CLIENT),
        holdersLaterToken: successor,
        problems: [],
      };
    }

    /** The holder's current token, presented by another client. */
    async function fromAnotherClient(thief: string, stolen: string): Promise<Theft> {
      return { thief, replay: await present(stolen, ADMIN_CLIENT), holdersLaterToken: stolen, problems: [] };
    }

    /**
     * The holder refreshes; the thief replays the token it replaced again and again: within the
     * window, while the successor is unused, each replay is a retry and gets the holder's own
     * successor (nothing new is minted). The holder then uses the successor while the thief goes
     * on; the first replay after that is reuse.
     */
    async function alongside(thief: string, stolen: string): Promise<Theft> {
      const successor = await refreshed(stolen);
      const problems: string[] = [];
      const check = (replay: RawResponse, when: string) => {
        if (replay.status === 200 && replay.json().refresh_token === successor) counts.thiefRetriesAnswered++;
        else if (replay.status === 200)
          problems.push(`a replay ${when} got a successor other than the holder's`);
        else if (when === 'before the holder went on')
          problems.push(`a replay ${when}: ${replay.status} ${replay.text}`);
      };
      for (let i = 0; i < 3; i++) check(await present(stolen, FRONTEND_CLIENT), 'before the holder went on');
      let used = false;
      const use = refresh(successor).finally(() => {
        used = true;
      });
      let alongsideReplays = 0;
      while (!used) {
        check(await present(stolen, FRONTEND_CLIENT), 'while the holder used its successor');
        alongsideReplays++;
        await sleep(20);
      }
      const answer = await use;
      return {
        thief,
        replay: await present(stolen, FRONTEND_CLIENT),
        // Refused if a replay alongside came after the rotation and its answer was lost.
        holdersLaterToken: answer.status === 200 ? String(answer.json().refresh_token) : successor,
        problems,
        detail:
          `${alongsideReplays} replay(s) while the holder used its successor, which was answered ` +
          `${answer.status === 200 ? '200' : `${answer.status} ${String(answer.json().error_description)}`}`,
      };
    }

    /** A theft on a family from `source`: a failure of its honest holder is an honest failure. */
    const theft = (
      thief: string,
      source: () => Promise<string>,
      scheme: (thief: string, stolen: string) => Promise<Theft>,
    ): Promise<Theft | undefined> =>
      source()
        .then((stolen) => scheme(thief, stolen))
        .catch((error: unknown) => {
          failures.push(`the holder robbed by ${thief}: ${(error as Error).message}`);
          return undefined;
        });

    const beforeOutage = [
      theft('a replay right after the successor was used', family, afterSuccessorUsed),
      theft('a replay after the retry window', family, afterWindow),
      theft('a token presented by another client', family, fromAnotherClient),
    ];
    const afterOutage = [
      theft(
        'after the outage, a replay right after the successor was used',
        throughOutage,
        afterSuccessorUsed,
      ),
      theft('after the outage, a replay after the retry window', throughOutage, afterWindow),
      theft('after the outage, replays within the window while the holder goes on', throughOutage, alongside),
      theft('after the outage, a token presented by another client', throughOutage, fromAnotherClient),
    ];

    // Answers are dropped and tabs race from the start; the first thieves act meanwhile.
    await Promise.all(beforeOutage);
    await sleep(1000);

    // The replica stops receiving: frozen, and dropped by the primary, so that it cannot take
    // what the primary accepts from then on from its socket once thawed, nor reconnect. With
    // replica acknowledgements, nothing accepted in the gap is answered 200.
    const oldMaster = await sentinel.masterPort();
    const primary = new Redis(oldMaster, '127.0.0.1', { lazyConnect: true });
    let acceptedOffset = 0;
    sentinel.replica.signal('SIGSTOP');
    try {
      await primary.call('CLIENT', 'KILL', 'TYPE', 'replica');
      await eventually(
        async () => /connected_slaves:0\b/.test(await primary.info('replication')),
        'the primary drops its replica',
        10_000,
      );
      phase = 'gap';
      timeline.push(`the replica is cut off ${now()}`);
      gapStarted.resolve();
      await sleep(GAP_MS);
      acceptedOffset = replicationOffset(await primary.info('replication'), 'master_repl_offset');
      // The primary dies with what it accepted in the gap; Sentinel promotes the replica, which
      // never got it, and which then has no replica of its own for longer than the retry window:
      // no rotation can be confirmed, every refresh is 503.
      phase = 'outage';
      sentinel.primary.signal('SIGKILL');
    } finally {
      sentinel.replica.signal('SIGCONT');
      primary.disconnect();
    }
    const killedAt = Date.now();
    timeline.push(`the primary is killed ${now()}`);
    let newMaster = oldMaster;
    await eventually(
      async () => {
        newMaster = await sentinel.masterPort().catch(() => oldMaster);
        return newMaster !== oldMaster;
      },
      'Sentinel promotes the replica',
      30_000,
    );
    const promotedAt = Date.now();
    timeline.push(`the replica is promoted ${now()}`);
    const promoted = new Redis(newMaster, '127.0.0.1', { lazyConnect: true });
    try {
      // A promoted replica's second offset is one past what it had of its old master.
      const had = replicationOffset(await promoted.info('replication'), 'second_repl_offset') - 1;
      counts.replicationMissed = acceptedOffset - had;
    } finally {
      promoted.disconnect();
    }
    await sleep(RETRY_SECONDS * 1000 + 2000);
    // A new replica in the killed one's place: restarted, that one would come back as a master
    // without data until the Sentinels convert it, up to 10 s later, which is not under test.
    freshReplica = await startRedis([
      '--repl-diskless-sync-delay',
      '0',
      '--replicaof',
      '127.0.0.1',
      String(newMaster),
    ]);
    const master = new Redis(newMaster, '127.0.0.1', { lazyConnect: true });
    try {
      await eventually(
        async () => /slave0:.*state=online/.test(await master.info('replication')),
        'the new replica is in sync',
        30_000,
      );
    } finally {
      master.disconnect();
    }
    const replicatedAt = Date.now();
    phase = 'after';
    timeline.push(`a replica confirms writes again ${now()}`);
    outageOver.resolve();

    // Both instances restart, one after the other, while the next thieves act.
    for (const instance of instances) {
      timeline.push(`instance ${instance.port} stops ${now()}`);
      await instance.service?.stop();
      await start(instance);
      timeline.push(`instance ${instance.port} is back ${now()}`);
    }

    const keys = await runCli(['keys:rotate', '--dir', keysDir], { cwd: root });
    assert.equal(keys.code, 0, keys.stderr);
    timeline.push(`keys rotated ${now()}`);
    await sleep(1000);

    // The clients' secret is rotated with an overlap, then rolled out to them.
    const rotation = await runCli(['client:rotate-secret', FRONTEND_CLIENT.client_id, '--overlap', '300'], {
      cwd: root,
      env: { MONGODB_URL: mongodbUrl, REDIS_URL: sentinel.url, BCRYPT_COST: '4' },
    });
    assert.equal(rotation.code, 0, rotation.stderr);
    await sleep(1000);
    timeline.push(`the client's secret rotated ${now()}`);
    clientSecret = String((JSON.parse(rotation.stdout) as { secret: string }).secret);
    await sleep(2000);

    const caught = [...(await Promise.all(beforeOutage)), ...(await Promise.all(afterOutage))];
    stopping = true;
    const finalTokens = await Promise.all(honest);

    // Every honest client refreshes once more: its session is alive.
    for (const [i, token] of finalTokens.entries()) {
      const name = [...singles, ...pairs][i];
      const response = await refresh(token);
      // One that was refused already is not refused again.
      if (response.status !== 200 && !failures.some((failure) => failure.startsWith(`${name}:`)))
        failures.push(`${name} afterwards: ${response.status} ${String(response.json().error_description)}`);
    }
    const thieves = [];
    for (const theft of caught) {
      if (!theft) continue;
      const { thief, replay, holdersLaterToken, problems, detail } = theft;
      const holder = await refresh(holdersLaterToken);
      const revoked =
        problems.length === 0 &&
        replay.status === 400 &&
        replay.json().error === 'invalid_grant' &&
        holder.status === 400 &&
        holder.json().error === 'invalid_grant';
      counts.thieves++;
      if (revoked) counts.thievesCaught++;
      thieves.push({ thief, replay: replay.status, holder: holder.status, revoked, problems, detail });
    }
    const gapUnproven = [...gapAnswers.values()].filter(
      ({ redeemedInGap, redeemedAfter }) => !redeemedInGap && !redeemedAfter,
    );
    counts.gapAnswered = gapAnswers.size;
    counts.gapSurvived = [...gapAnswers.values()].filter(({ redeemedAfter }) => redeemedAfter).length;

    for (const [name, value] of Object.entries(counts)) t.diagnostic(`${name}: ${value}`);
    for (const turn of timeline) t.diagnostic(turn);
    for (const { thief, replay, holder, detail } of thieves)
      t.diagnostic(`${thief}: replay ${replay}, holder then ${holder}${detail ? `; ${detail}` : ''}`);
    t.diagnostic(
      `failover: promoted ${promotedAt - killedAt} ms after the kill; confirmations resumed ` +
        `${replicatedAt - killedAt} ms after it`,
    );
    console.log(`# nobody signed out: ${JSON.stringify(counts)}`);

    assert.deepEqual(failures, [], 'no honest client was signed out or refused');
    assert.equal(
      gapUnproven.length,
      0,
      'every successor answered 200 in the gap was used after the promotion',
    );
    assert.deepEqual(
      thieves.filter(({ revoked }) => !revoked),
      [],
      'every thief was refused and its family revoked, its holder refused after it',
    );
    assert.equal(counts.thieves, beforeOutage.length + afterOutage.length, 'every thief acted');
    // What the run was to go through, it went through.
    assert.ok(counts.dropped > 0, 'answers were dropped');
    assert.ok(counts.replicationMissed > 0, 'the promoted replica had missed writes the primary accepted');
    assert.ok(counts.gapUnavailable > 0, 'rotations the replica could not confirm were answered 503');
    assert.ok(counts.tabRounds > 0, 'tabs refreshed together');
    assert.ok(counts.thiefRetriesAnswered > 0, 'a replay within the window got the successor its holder got');
  });
});

/** A number from `INFO replication`. */
function replicationOffset(info: string, field: string): number {
  const value = new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1];
  if (value === undefined) throw new Error(`no ${field} in: ${info}`);
  return Number(value);
}
