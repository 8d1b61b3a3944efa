/**
 * node-oidc-provider 9, configured to answer the bench's `client_credentials` request the way
 * the service does: HTTP Basic client authentication, one scope, and an RS256 JWT access token
 * for the resource named by a resource indicator (RFC 8707). Clients are static (its
 * in-process client cache) and the adapter is its in-memory one.
 *
 *   node bench/oidc-provider-peer.ts <port> <processes>
 *
 * With 2 or more processes a node:cluster primary forks that many workers on the one port,
 * all signing with the same key. It prints `serving` once every process listens and runs
 * until it is sent SIGTERM.
 */
import cluster from 'node:cluster';
import { generateKeyPairSync } from 'node:crypto';

export const PEER_CLIENT = { client_id: 'bench', client_secret: 'bench-client-secret' };
export const PEER_RESOURCE = 'https://api.example.com';
export const PEER_SCOPE = 'api';

const KEY_VARIABLE = 'BENCH_PEER_JWK';

async function serve(port: number, jwk: string): Promise<void> {
  // Loaded here, so that the bench can import the constants above without loading the provider.
  const { default: Provider } = await import('oidc-provider');
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [
      {
        ...PEER_CLIENT,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: PEER_SCOPE,
      },
    ],
    jwks: { keys: [{ ...JSON.parse(jwk), alg: 'RS256', use: 'sig' }] },
    scopes: [PEER_SCOPE],
    ttl: { ClientCredentials: 900 },
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: async () => ({
          scope: PEER_SCOPE,
          audience: PEER_RESOURCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 900,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  return new Promise((resolve) => {
    provider.listen(port, '127.0.0.1', resolve);
  });
}

function forkWorkers(count: number, jwk: string): Promise<void> {
  let listening = 0;
  return new Promise((resolve, reject) => {
    cluster.on('listening', () => {
      listening += 1;
      if (listening === count) resolve();
    });
    cluster.on('exit', (_worker, code, signal) => reject(new Error(`a worker exited (${code ?? signal})`)));
    for (let i = 0; i < count; i++) cluster.fork({ [KEY_VARIABLE]: jwk });
  });
}

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const processes = Number(process.argv[3] ?? 1);
  if (!Number.isInteger(port) || !Number.isInteger(processes) || processes < 1) {
    throw new Error('usage: node bench/oidc-provider-peer.ts <port> <processes>');
  }
  if (cluster.isWorker) {
    await serve(port, process.env[KEY_VARIABLE] ?? '');
    return;
  }
  const jwk = JSON.stringify(
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  );
  await (processes === 1 ? serve(port, jwk) : forkWorkers(processes, jwk));
  process.stdout.write('serving\n');
  process.once('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
    process.exit(0);
  });
}

if (import.meta.main) await main();
