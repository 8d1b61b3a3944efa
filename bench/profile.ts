/**
 * `npm run bench:profile -- <scenario> [seconds]`: where the time of one kind of request goes.
 * It starts the service (1 worker, memory stores) under `node --cpu-prof`, warms it up, loads
 * it with one scenario for `seconds` (default 10), stops it, and prints:
 *
 * - the server's CPU per request from /proc (user + system, all its processes and threads),
 *   split by thread: the request thread, libuv's thread pool (where WebCrypto and async
 *   `node:crypto` calls run), V8's helper threads (GC, compilation);
 * - the request thread's self time within the load window, by module group and by function,
 *   and the inclusive time of the service's own functions.
 *
 * Scenarios: client_credentials, refresh, read (an authenticated GET /users/{id}), password.
 * With `PROFILE_REDIS_URL` or `PROFILE_MONGODB_URL` set, the service uses those backends
 * (as its REDIS_URL and MONGODB_URL) instead of memory stores.
 * A profile only samples the request thread: work handed to the thread pool shows there as
 * the thread pool's CPU, not as functions.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwtPart, FRONTEND_CLIENT } from '../test/support/http.ts';
import {
  clientCredentialsLoad,
  load,
  log,
  type Measurement,
  ours,
  passwordGrant,
  passwordLoad,
  refreshLoad,
  refreshTokenPool,
} from './load.ts';
import { summariseProfile, topLines } from './profile-summary.ts';
import { startService, stopAll } from './servers.ts';

const SCENARIOS = ['client_credentials', 'refresh', 'read', 'password'] as const;
type Scenario = (typeof SCENARIOS)[number];

const TICKS_PER_SECOND = 100;

/**
 * The backends this run was asked to profile on. Names of their own: the REDIS_URL and
 * MONGODB_URL the tests take may well be set in a developer's shell.
 */
function backendsFromEnvironment(): Record<string, string> {
  const { PROFILE_REDIS_URL: REDIS_URL, PROFILE_MONGODB_URL: MONGODB_URL } = process.env;
  return { ...(REDIS_URL && { REDIS_URL }), ...(MONGODB_URL && { MONGODB_URL }) };
}

/** CPU seconds of each thread of a process, by thread name (threads of one name added up). */
function threadSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      byName.set(tid === String(pid) ? 'request thread' : name, (byName.get(name) ?? 0) + seconds);
    } catch {
      // the thread ended while we looked
    }
  }
  return byName;
}

/** The monotonic clock the profile's timestamps use, in microseconds. */
const nowMicros = () => Number(process.hrtime.bigint() / 1000n);

/** Prepares a scenario (tokens, a pool of refresh tokens), then gives its load for a duration. */
async function prepare(scenario: Scenario, url: string): Promise<(seconds: number) => Promise<Measurement>> {
  const endpoints = ours(url);
  switch (scenario) {
    case 'client_credentials': {
      const measure = clientCredentialsLoad(endpoints.token, FRONTEND_CLIENT);
      return (seconds) => measure(seconds);
    }
    case 'refresh': {
      // One pool for the whole run: tokens are put back as they are rotated. Twice the usual
      // size, since the tokens in flight when the warm-up ends are spent but never answered.
      const pool = [...(await refreshTokenPool(endpoints)), ...(await refreshTokenPool(endpoints))];
      return (seconds) => refreshLoad(endpoints, pool, { seconds });
    }
    case 'read': {
      const { access_token: token } = await passwordGrant(endpoints);
      const readUrl = `${url}/users/${String(decodeJwtPart(token, 1).sub)}`;
      return (seconds) => load(readUrl, { seconds, headers: { authorization: `Bearer ${token}` } });
    }
    case 'password':
      return (seconds) => passwordLoad(endpoints, { seconds, connections: 4 });
  }
}

async function main(): Promise<void> {
  const scenario = process.argv[2] as Scenario;
  const seconds = Number(process.argv[3] ?? 10);
  if (!SCENARIOS.includes(scenario) || !(seconds > 0)) {
    throw new Error(`usage: npm run bench:profile -- <${SCENARIOS.join('|')}> [seconds]`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-profile-'));
  try {
    const service = await startService({
      WORKERS: '1',
      NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}`,
      ...backendsFromEnvironment(),
    });
    const [worker] = service.workerPids();
    if (worker === undefined) throw new Error('the service has no worker');
    const measure = await prepare(scenario, service.url);
    log(`${scenario}: warm-up`);
    await measure(3);
    log(`${scenario}: ${seconds} s under the profiler`);
    const before = threadSeconds(worker);
    const from = nowMicros();
    const measured = await measure(seconds);
    const to = nowMicros();
    const after = threadSeconds(worker);
    await service.stop();

    const profile = readdirSync(dir).find((name) => name.includes(`.${worker}.0.`));
    if (!profile) throw new Error(`no profile of the worker's request thread in ${dir}`);
    const summary = summariseProfile(join(dir, profile), from, to);
    const per = Math.max(measured.ok, 1);
    const threads = [...after.entries()]
      .map(([name, used]) => [name, used - (before.get(name) ?? 0)] as const)
      .filter(([, used]) => used > 0)
      .sort((a, b) => b[1] - a[1]);
    const total = threads.reduce((sum, [, used]) => sum + used, 0);
    const idle = summary.groups.get('(idle)') ?? 0;
    const busy = summary.sampled - idle;
    console.log(
      [
        `${scenario}: ${measured.ok} answered 2xx in ${seconds} s (${(measured.ok / seconds).toFixed(0)}/s), ` +
          `${measured.failures} failed; worker CPU ${((total * 1000) / per).toFixed(3)} ms per request`,
        '',
        'worker CPU by thread (ms per request):',
        ...threads.map(([name, used]) => `  ${((used * 1000) / per).toFixed(4).padStart(7)} ms  ${name}`),
        '',
        `request thread, self time by group (% of its busy samples; idle ${((100 * idle) / summary.sampled).toFixed(1)}%):`,
        ...topLines(new Map([...summary.groups].filter(([key]) => key !== '(idle)')), busy, per, 25),
        '',
        'request thread, self time by function:',
        ...topLines(
          new Map([...summary.functions].filter(([key]) => !key.startsWith('(idle)'))),
          busy,
          per,
          40,
        ),
        '',
        "request thread, inclusive time of the service's functions:",
        ...topLines(summary.ownTotals, busy, per, 30),
      ].join('\n'),
    );
  } finally {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
