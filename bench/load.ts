/**
 * The bench's load generator (autocannon, in this process) and the requests it sends: each
 * measurement is a short slice of load, and comparisons interleave their slices.
 */
import autocannon from 'autocannon';
import { FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';
import { send } from '../test/support/processes.ts';

export const SLICE = Number(process.env.BENCH_SLICE_SECONDS ?? 2);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

const started = Date.now();
export const log = (message: string) =>
  process.stderr.write(`[bench ${Math.round((Date.now() - started) / 1000)} s] ${message}\n`);

export interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  /** Cores each group of processes kept busy meanwhile (see cpu.ts), when measured. */
  cpu?: Record<string, number>;
}

type Request = autocannon.Request;

export async function load(
  url: string,
  options: {
    connections?: number;
    seconds?: number;
    /** A fixed number of requests instead of a duration; spread evenly over the connections. */
    amount?: number;
    requests?: Request[];
    headers?: Record<string, string>;
    overallRate?: number;
  } = {},
): Promise<Measurement> {
  const result = await autocannon({
    url,
    connections: options.connections ?? CONNECTIONS,
    duration: options.seconds ?? SLICE,
    timeout: 20,
    ...(options.amount ? { amount: options.amount } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.requests ? { requests: options.requests } : {}),
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
  });
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function medianOf(slices: Measurement[]): Measurement {
  const cpuGroups = Object.keys(slices[0]?.cpu ?? {});
  return {
    rps: median(slices.map((s) => s.rps)),
    p50: median(slices.map((s) => s.p50)),
    p99: median(slices.map((s) => s.p99)),
    failures: slices.reduce((sum, s) => sum + s.failures, 0),
    ...(cpuGroups.length > 0
      ? {
          cpu: Object.fromEntries(
            cpuGroups.map((group) => [group, median(slices.map((s) => s.cpu?.[group] ?? 0))]),
          ),
        }
      : {}),
  };
}

/** Runs each named measurement once per round, in turn, and gives the median of each. */
export async function interleaved<K extends string>(
  label: string,
  measures: Record<K, () => Promise<Measurement>>,
): Promise<Record<K, Measurement>> {
  const slices = Object.fromEntries(Object.keys(measures).map((key) => [key, [] as Measurement[]])) as Record<
    K,
    Measurement[]
  >;
  for (let round = 1; round <= ROUNDS; round++) {
    log(`${label}: round ${round}/${ROUNDS}`);
    for (const key of Object.keys(measures) as K[]) slices[key].push(await measures[key]());
  }
  return Object.fromEntries(
    Object.entries(slices).map(([key, s]) => [key, medianOf(s as Measurement[])]),
  ) as Record<K, Measurement>;
}

export const json = (body: unknown): Pick<Request, 'method' | 'headers' | 'body'> => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify(body),
});

export const PASSWORD_GRANT = { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER };

export async function passwordGrant(url: string): Promise<{ access_token: string; refresh_token: string }> {
  const response = await send(`${url}/security/generate-token`, { method: 'POST', json: PASSWORD_GRANT });
  if (response.status !== 200) throw new Error(`password grant failed: ${response.status} ${response.text}`);
  return response.json() as { access_token: string; refresh_token: string };
}

/**
 * Refresh grants: every request needs a refresh token nobody used yet. A pool of tokens is
 * issued first (by password grants, outside the measured time); each request takes one and
 * each response puts the rotated token back. (autocannon resets a connection's context after
 * every request, so the pool is shared by the connections.)
 */
export async function refreshTokenPool(url: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: CONNECTIONS * 2 }, async () => (await passwordGrant(url)).refresh_token),
  );
}

/**
 * Refresh grants over `pool` for a slice, or for `amount` requests. The pool is a queue, so
 * with more tokens than connections each session is refreshed in turn.
 */
export function refreshLoad(
  url: string,
  pool: string[],
  options: { amount?: number; connections?: number } = {},
): Promise<Measurement> {
  return load(`${url}/security/refresh-token`, {
    ...options,
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          ...json({
            grant_type: 'refresh_token',
            scope: 'api',
            ...FRONTEND_CLIENT,
            refresh_token: pool.shift(),
          }),
        }),
        onResponse: (status, body) => {
          if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      },
    ],
  });
}
