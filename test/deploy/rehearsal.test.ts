/**
 * The shipped deployment, rehearsed: docker-compose.ha.yml with `.env.example` run as processes
 * (test/support/shipped-deployment.ts: nginx from Debian on the project's template, two app
 * instances of two workers each, the Redis data nodes and sentinels as the file runs them,
 * FerretDB, and an SMTP server), used through nginx over HTTPS from one client address as a
 * backend for frontend uses it: clients that each refresh their own session (signed in
 * beforehand), and client_credentials calls, 120 requests a second offered. First 60 s of that
 * load, which nginx must pass without a 429 or a 5xx, while a person registers and activates
 * the account from the mail. Then, under the same load, kill -9 of a Redis replica (down for a
 * while, as a lost host, then back), and of the primary, which the sentinels replace: no honest
 * client is signed out, no answered rotation is lost, and answers are normal again within 15 s
 * of each promotion (503s meanwhile are counted). The figures are printed; the rate reached
 * among them, since a test asserts no speed (on a machine shared by other work it is lower).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { onPath } from '../support/backends.ts';
import { composeCheckSkipped } from '../support/compose.ts';
import { FRONTEND_CLIENT, SEEDED_USER } from '../support/http.ts';
import { ensureNginx, type RawResponse, send } from '../support/processes.ts';
import {
  type DataNode,
  type ShippedDeployment,
  startShippedDeployment,
  until,
} from '../support/shipped-deployment.ts';
import { lastMailTo, linkIn } from '../support/smtp.ts';

/** Requests a second the load offers: each loop sends one, then waits out the rest of its period. */
const TARGET_RATE = 120;
const REFRESHING_CLIENTS = 48;
const CLIENT_CREDENTIALS_LOOPS = 12;
const LOOP_PERIOD_MS = ((REFRESHING_CLIENTS + CLIENT_CREDENTIALS_LOOPS) * 1000) / TARGET_RATE;
const CALM_MS = 60_000;
/** How long a killed node stays down: a lost host, not a crash the restart policy undoes at once. */
const DOWN_MS = 20_000;
/** Answers must be normal again this long after a promotion (or after a replica's loss). */
const NORMAL_WITHIN_MS = 15_000;

function missing(): string | false {
  const nginx = ensureNginx();
  const reason =
    composeCheckSkipped ||
    ('reason' in nginx ? nginx.reason : '') ||
    (!onPath('redis-server') ? 'redis-server is not on PATH' : '') ||
    (!onPath('ferretdb') ? 'ferretdb is not on PATH (.ci/backends.sh builds it)' : '') ||
    (!onPath('openssl') ? 'openssl is not on PATH' : '');
  if (!reason) return false;
  console.log(`# rehearsal of the shipped deployment not run: ${reason}`);
  return reason;
}
const skip = missing();

type Kind = 'sign-in' | 'refresh' | 'client_credentials';

/** One answer nginx gave (status 0: the connection failed), when. */
interface Answer {
  at: number;
  kind: Kind;
  status: number;
  contentType: string;
  /** The body of an answer other than 200, shortened. */
  detail?: string;
}

/** An honest client's refresh refused after the service had answered the rotation that made its token. */
interface Loss {
  at: number;
  client: string;
  status: number;
  error: string;
}

describe('the shipped HA deployment, rehearsed through nginx', { skip }, () => {
  let root: string;
  let deployment: ShippedDeployment;
  let agent: Agent;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'rehearsal-'));
    const nginx = ensureNginx();
    if ('reason' in nginx) throw new Error(nginx.reason);
    deployment = await startShippedDeployment({ root, nginx: nginx.binary });
    // A backend keeps its connections to the token service open, as any HTTP client library does.
    agent = new Agent({ keepAlive: true, ca: deployment.ca });
  });

  after(async () => {
    agent?.destroy();
    await deployment?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('a backend-for-frontend load passes, mail arrives, and losing any Redis node signs nobody out', {
    timeout: 480_000,
  }, async (t) => {
    const answers: Answer[] = [];
    const losses: Loss[] = [];
    const unexpected: string[] = [];
    let stopping = false;

    async function post(
      kind: Kind,
      path: string,
      json: Record<string, string>,
    ): Promise<RawResponse | undefined> {
      try {
        const response = await send(`${deployment.https}${path}`, {
          method: 'POST',
          json,
          agent,
          ca: deployment.ca,
          timeoutMs: 30_000,
        });
        answers.push({
          at: Date.now(),
          kind,
          status: response.status,
          contentType: String(response.headers['content-type']),
          ...(response.status === 200 ? {} : { detail: response.text.slice(0, 300) }),
        });
        return response;
      } catch {
        answers.push({ at: Date.now(), kind, status: 0, contentType: '' });
        return undefined;
      }
    }

    /**
     * `attempt` as a standard client makes it: again, unchanged, after a failed connection, a
     * 5xx or a 429, with back-off; the first other answer is the outcome.
     */
    async function asClient(attempt: () => Promise<RawResponse | undefined>): Promise<RawResponse> {
      const deadline = Date.now() + 60_000;
      for (let tries = 0; ; tries++) {
        const response = await attempt();
        if (response && response.status < 500 && response.status !== 429) return response;
        if (Date.now() > deadline) throw new Error(`still ${response?.status ?? 'no answer'} after 60 s`);
        await sleep(Math.min(1000, 50 * 2 ** tries));
      }
    }

    async function signIn(client: string): Promise<string> {
      const response = await asClient(() =>
        post('sign-in', '/security/generate-token', {
          grant_type: 'password',
          scope: 'api',
          ...FRONTEND_CLIENT,
          ...SEEDED_USER,
        }),
      );
      if (response.status !== 200)
        throw new Error(`${client} cannot sign in: ${response.status} ${response.text}`);
      return String(response.json().refresh_token);
    }

    async function paced(work: () => Promise<void>): Promise<void> {
      while (!stopping) {
        const started = Date.now();
        await work();
        await sleep(Math.max(0, LOOP_PERIOD_MS - (Date.now() - started)));
      }
    }

    /** A user's session, refreshed by the backend; a refusal of its current token is a loss, and a new sign-in. */
    async function refreshingClient(client: string, signedIn: string): Promise<void> {
      let token = signedIn;
      await paced(async () => {
        const response = await asClient(() =>
          post('refresh', '/security/refresh-token', {
            grant_type: 'refresh_token',
            scope: 'api',
            ...FRONTEND_CLIENT,
            refresh_token: token,
          }),
        );
        if (response.status === 200) {
          token = String(response.json().refresh_token);
          return;
        }
        losses.push({
          at: Date.now(),
          client,
          status: response.status,
          error: String(response.json().error),
        });
        token = await signIn(client);
      });
    }

    async function clientCredentials(): Promise<void> {
      await paced(async () => {
        const response = await asClient(() =>
          post('client_credentials', '/security/generate-token', {
            grant_type: 'client_credentials',
            scope: 'api',
            ...FRONTEND_CLIENT,
          }),
        );
        if (response.status !== 200)
          unexpected.push(`client_credentials: ${response.status} ${response.text}`);
      });
    }

    // The users sign in first, a few at a time, as they arrive over a morning; the load is what follows.
    const clients = Array.from({ length: REFRESHING_CLIENTS }, (_, i) => `client ${i + 1}`);
    const sessions: string[] = [];
    for (let i = 0; i < clients.length; i += 4)
      sessions.push(...(await Promise.all(clients.slice(i, i + 4).map((client) => signIn(client)))));

    const loadStarted = Date.now();
    const load = [
      ...clients.map((client, i) => refreshingClient(client, sessions[i] ?? '')),
      ...Array.from({ length: CLIENT_CREDENTIALS_LOOPS }, () => clientCredentials()),
    ];
    const loadFailed = Promise.all(load).then(
      () => undefined,
      (error: unknown) => error,
    );

    // Whatever fails below, the load stops with the test.
    t.after(() => {
      stopping = true;
    });

    // A person registers meanwhile, and activates the account from the mail.
    await sleep(5_000);
    const registration = await registerFromMail(deployment).catch((error: unknown) => ({
      failed: String(error),
    }));
    await sleep(Math.max(0, loadStarted + CALM_MS - Date.now()));
    const calmEnded = Date.now();

    /** Answers within [from, to), and what they say. */
    const within = (from: number, to: number) => answers.filter(({ at }) => at >= from && at < to);
    const statuses = (list: Answer[]) => {
      const counted: Record<string, number> = {};
      for (const { status, contentType, detail } of list) {
        const key = status === 200 ? '200' : `${status} ${contentType} ${detail ?? ''}`;
        counted[key] = (counted[key] ?? 0) + 1;
      }
      return counted;
    };
    const calm = within(loadStarted, calmEnded);
    const figures: Record<string, unknown> = {
      calm: {
        seconds: (calmEnded - loadStarted) / 1000,
        requests: calm.length,
        perSecond: Math.round(calm.length / ((calmEnded - loadStarted) / 1000)),
        tooMany: calm.filter(({ status }) => status === 429).length,
        serverErrors: calm.filter(({ status }) => status >= 500 || status === 0).length,
        statuses: statuses(calm),
      },
      registration,
    };

    /** What losing `node` did: killed, (promoted,) back; measured from the answers. */
    async function lose(role: 'replica' | 'primary', node: DataNode) {
      const killedAt = Date.now();
      node.server.signal('SIGKILL');
      let promotedAt: number | undefined;
      let newPrimary: DataNode | undefined;
      if (role === 'primary') {
        await until(
          async () => {
            newPrimary = await deployment.primary();
            return newPrimary.name !== node.name;
          },
          `the sentinels promote a replica after ${node.name} was killed`,
          60_000,
        );
        promotedAt = Date.now();
      }
      // When the primary has a replica online again, for the story of the figures.
      let replicaOnlineAt: number | undefined;
      void until(
        async () => (await deployment.onlineReplicas()).length > 0,
        'a replica online',
        DOWN_MS,
      ).then(
        () => {
          replicaOnlineAt = Date.now();
        },
        () => {},
      );
      const reference = promotedAt ?? killedAt;
      await sleep(
        Math.max(0, killedAt + DOWN_MS - Date.now(), reference + NORMAL_WITHIN_MS + 2_000 - Date.now()),
      );
      const restartedAt = Date.now();
      await node.server.restart();
      const primary = newPrimary ?? (await deployment.primary());
      await until(
        () => deployment.settled(primary),
        `${node.name} is a replica of ${primary.name} again`,
        60_000,
      );
      await sleep(3_000);
      const ended = Date.now();
      const during = within(killedAt, ended);
      const abnormal = during.filter(({ status }) => status !== 200);
      const lastAbnormal = abnormal.at(-1)?.at;
      return {
        node: node.name,
        promotedAfterSeconds: promotedAt === undefined ? undefined : (promotedAt - killedAt) / 1000,
        promoted: newPrimary?.name,
        downSeconds: (restartedAt - killedAt) / 1000,
        replicaOnlineAfterSeconds:
          replicaOnlineAt === undefined ? undefined : (replicaOnlineAt - killedAt) / 1000,
        requests: during.length,
        unavailable: during.filter(({ status }) => status === 503).length,
        otherServerErrors: during.filter(({ status }) => status >= 500 && status !== 503).length,
        failedConnections: during.filter(({ status }) => status === 0).length,
        tooMany: during.filter(({ status }) => status === 429).length,
        secondsToNormal: lastAbnormal === undefined ? 0 : Math.max(0, (lastAbnormal - reference) / 1000),
        /** Answers that were not normal once the time allowed had passed. */
        lateAbnormal: abnormal.filter(({ at }) => at > reference + NORMAL_WITHIN_MS).length,
        clientsSignedOut: new Set(
          losses.filter(({ at }) => at >= killedAt && at < ended).map(({ client }) => client),
        ).size,
        rotationsLost: losses.filter(({ at }) => at >= killedAt && at < ended).length,
        statuses: statuses(during),
      };
    }

    const [replica] = await deployment.onlineReplicas();
    const replicaNode = deployment.dataNodes.find(({ name }) => name === replica);
    assert.ok(replicaNode, `a replica is online: ${replica}`);
    const replicaLoss = await lose('replica', replicaNode);
    const primaryLoss = await lose('primary', await deployment.primary());
    figures.kills = [replicaLoss, primaryLoss];

    stopping = true;
    const loadError = await loadFailed;
    figures.total = {
      seconds: (Date.now() - loadStarted) / 1000,
      requests: answers.length,
      tooMany: answers.filter(({ status }) => status === 429).length,
      clientsSignedOut: new Set(losses.map(({ client }) => client)).size,
      rotationsLost: losses.length,
    };
    for (const [name, value] of Object.entries(figures)) t.diagnostic(`${name}: ${JSON.stringify(value)}`);
    console.log(`# rehearsal: ${JSON.stringify(figures)}`);

    // The story of a run that went wrong: what the apps said of their backends, and the nodes' logs.
    if (loadError !== undefined || [replicaLoss, primaryLoss].some(({ lateAbnormal }) => lateAbnormal > 0)) {
      for (const [i, app] of deployment.apps.entries())
        t.diagnostic(
          `app ${i + 1}:\n${app.lines.filter((line) => /Redis|Sentinel|MongoDB/i.test(line)).join('\n')}`,
        );
      for (const node of deployment.dataNodes)
        t.diagnostic(`${node.name} (port ${node.port}):\n${node.log().split('\n').slice(-40).join('\n')}`);
    }
    assert.equal(loadError, undefined, 'every client kept going');
    assert.ok(!('failed' in registration), 'a person registered, and activated the account from the mail');
    assert.deepEqual(unexpected, [], 'every client_credentials call that was answered was a token');
    // The requirement is no failure at all; the message names each, since a message replaces
    // the assertion's own diff.
    const calmFailures = calm.filter(({ status }) => status !== 200);
    assert.deepEqual(
      calmFailures,
      [],
      `the load passed nginx without a 429 or a 5xx; ${calmFailures.length} did not:\n${calmFailures
        .slice(0, 20)
        .map(
          ({ at, kind, status, detail }) =>
            `  ${((at - loadStarted) / 1000).toFixed(1)} s ${kind} ${status} ${detail ?? ''}`,
        )
        .join('\n')}`,
    );
    assert.equal(answers.filter(({ status }) => status === 429).length, 0, 'nginx throttled nothing, ever');
    assert.deepEqual(losses, [], 'no honest client was signed out; no answered rotation was lost');
    for (const loss of [replicaLoss, primaryLoss])
      assert.equal(
        loss.lateAbnormal,
        0,
        `answers normal within 15 s after losing ${loss.node}: ${JSON.stringify(loss)}`,
      );
  });
});

/** A registration through nginx whose activation mail arrives over SMTP, activated from its link. */
async function registerFromMail(deployment: ShippedDeployment) {
  const identity = `rehearsal-${Date.now()}@example.com`;
  const password = 'Rehearsal-passw0rd-of-a-person';
  const url = (path: string) => `${deployment.https}${path}`;
  const registered = await send(url('/account/register'), {
    method: 'POST',
    json: { identity, password, passwordConfirm: password },
    ca: deployment.ca,
  });
  assert.equal(registered.status, 201, registered.text);
  const mail = lastMailTo(deployment.mail.received, identity);
  const link = linkIn(mail.parsed, '/account/activate/');
  const activated = await send(url(link.path), { method: 'PATCH', json: { password }, ca: deployment.ca });
  assert.equal(activated.status, 200, activated.text);
  assert.equal(activated.json().status, 'active');
  const signedIn = await send(url('/security/generate-token'), {
    method: 'POST',
    json: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, username: identity, password },
    ca: deployment.ca,
  });
  assert.equal(signedIn.status, 200, signedIn.text);
  return { mailedTo: mail.to, link: `${new URL(link.url).origin}/account/activate/…`, signedIn: true };
}
