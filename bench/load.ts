/**
 * The bench's load generator (autocannon, in this process) and the requests it sends: each
 * measurement is a short slice of load, and comparisons interleave their slices.
 */
import autocannon from 'autocannon';
import { FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';
import { send } from '../test/support/processes.ts';
import { PEER_RESOURCE, PEER_SCOPE } from './oidc-provider-peer.ts';

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
  /** Requests answered 2xx: on a token row, the tokens issued. */
  ok: number;
  /** Cores each group of processes kept busy meanwhile (see cpu.ts), when measured. */
  cpu?: Record<string, number>;
  /** CPU milliseconds (user + system) of all the server's processes per 2xx answer, when measured. */
  serverMsPerRequest?: number;
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
    ok: result['2xx'],
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
    ok: slices.reduce((sum, s) => sum + s.ok, 0),
    ...(slices[0]?.serverMsPerRequest === undefined
      ? {}
      : { serverMsPerRequest: median(slices.map((s) => s.serverMsPerRequest ?? 0)) }),
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

/**
 * Where a server takes token requests: the service has two routes, a peer one `/token`. Every
 * token request is a form (RFC 6749 §4), the one encoding every server measured here reads.
 */
export interface TokenEndpoints {
  token: string;
  refresh: string;
}

export const ours = (url: string): TokenEndpoints => ({
  token: `${url}/security/generate-token`,
  refresh: `${url}/security/refresh-token`,
});

export const peer = (url: string): TokenEndpoints => ({ token: `${url}/token`, refresh: `${url}/token` });

export const form = (params: Record<string, string>) => ({
  method: 'POST' as const,
  headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
  body: new URLSearchParams(params).toString(),
});

export const PASSWORD_GRANT = { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER };

export async function passwordGrant(
  endpoints: TokenEndpoints,
): Promise<{ access_token: string; refresh_token: string }> {
  const { method, headers, body } = form(PASSWORD_GRANT);
  const response = await send(endpoints.token, { method, headers, body });
  if (response.status !== 200) throw new Error(`password grant failed: ${response.status} ${response.text}`);
  return response.json() as { access_token: string; refresh_token: string };
}

/** Password grants on `connections` connections, for a slice or for `amount` requests. */
export function passwordLoad(
  endpoints: TokenEndpoints,
  options: {
    amount?: number;
    seconds?: number;
    connections?: number;
    onToken?: (refreshToken: string) => void;
  } = {},
): Promise<Measurement> {
  const { onToken, ...rest } = options;
  return load(endpoints.token, {
    ...rest,
    requests: [
      {
        ...form(PASSWORD_GRANT),
        onResponse: (status, body) => {
          if (status === 200) onToken?.((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      },
    ],
  });
}

/**
 * Refresh grants: every request needs a refresh token nobody used yet. A pool of tokens is
 * issued first (by password grants, outside the measured time); each request takes one and
 * each response puts the rotated token back. (autocannon resets a connection's context after
 * every request, so the pool is shared by the connections.)
 */
export async function refreshTokenPool(endpoints: TokenEndpoints): Promise<string[]> {
  return Promise.all(
    Array.from({ length: CONNECTIONS * 2 }, async () => (await passwordGrant(endpoints)).refresh_token),
  );
}

/**
 * Refresh grants over `pool` for a slice, or for `amount` requests. The pool is a queue, so
 * with more tokens than connections each session is refreshed in turn.
 */
export function refreshLoad(
  endpoints: TokenEndpoints,
  pool: string[],
  options: { amount?: number; seconds?: number; connections?: number } = {},
): Promise<Measurement> {
  return load(endpoints.refresh, {
    ...options,
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          ...form({
            grant_type: 'refresh_token',
            scope: 'api',
            ...FRONTEND_CLIENT,
            refresh_token: pool.shift() ?? '',
          }),
        }),
        onResponse: (status, body) => {
          if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      },
    ],
  });
}

/** The request of the client_credentials comparison, the same bytes to both servers. */
const CLIENT_CREDENTIALS_BODY = new URLSearchParams({
  grant_type: 'client_credentials',
  scope: PEER_SCOPE,
  resource: PEER_RESOURCE,
}).toString();
/** Enough connections to keep every contender busy, oidc-provider's 2-worker cluster too. */
export const CLIENT_CREDENTIALS_CONNECTIONS = 50;

export function clientCredentialsLoad(
  tokenUrl: string,
  client: { client_id: string; client_secret: string },
  connections = CLIENT_CREDENTIALS_CONNECTIONS,
) {
  const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
  return (seconds = SLICE) =>
    load(tokenUrl, {
      seconds,
      connections,
      requests: [
        {
          method: 'POST',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: CLIENT_CREDENTIALS_BODY,
        },
      ],
    });
}
