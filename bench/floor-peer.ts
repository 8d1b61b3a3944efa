/**
 * The floor under every token endpoint on `node:http` that signs as the service does: a plain
 * server that reads the request's body, signs an RS256 JWT with the service's header and claims
 * on libuv's thread pool (a KeyObject made once, `crypto.sign` with a callback) and answers it
 * as JSON. It checks nothing: no client, no grant, no scope, no route. Whatever a real server
 * spends per token beyond this one's CPU is its own work; what this one spends is Node's HTTP
 * layer and the signature, which no server on them avoids.
 *
 *   node bench/floor-peer.ts <port>
 *
 * It answers every request, prints `serving` once it listens and runs until it is sent SIGTERM.
 */
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { thumbprint } from '../src/oauth/key-ring-store.ts';
import { FRONTEND_CLIENT } from '../test/support/http.ts';

/** The service's default APP_URL, its `iss` and `aud`. */
const ISSUER = 'http://localhost:8080';
const ACCESS_TOKEN_TTL = 900;

function serve(port: number): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const header = Buffer.from(
    JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid: thumbprint(publicKey) }),
  ).toString('base64url');
  const clientRegistration = randomUUID();
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    req.resume();
    req.once('end', () => {
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        client_id: FRONTEND_CLIENT.client_id,
        client_rid: clientRegistration,
        scope: 'api',
        kind: 'client',
        iss: ISSUER,
        aud: ISSUER,
        sub: clientRegistration,
        jti: randomUUID(),
        iat: now,
        exp: now + ACCESS_TOKEN_TTL,
      };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      sign('sha256', Buffer.from(input, 'latin1'), privateKey, (error, signature) => {
        if (error) {
          res.writeHead(500).end();
          return;
        }
        const token = `${input}.${signature.toString('base64url')}`;
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL }));
      });
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
}

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port)) throw new Error('usage: node bench/floor-peer.ts <port>');
  await serve(port);
  process.stdout.write('serving\n');
  process.once('SIGTERM', () => process.exit(0));
}

if (import.meta.main) await main();
