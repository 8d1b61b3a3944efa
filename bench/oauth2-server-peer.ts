/**
 * @node-oauth/oauth2-server 5, the most used Node.js OAuth 2.0 library that still has the
 * password grant, with the leanest model that answers the bench's token requests the way the
 * service does: clients, users and refresh tokens in memory; the client secret compared as a
 * SHA-256 digest in constant time; the password checked with bcryptjs at `BCRYPT_COST`; an
 * RS256 JWT access token signed with `node:crypto` on libuv's thread pool, as the service signs
 * (a KeyObject made once, `crypto.sign` with a callback), carrying the claims of the service's
 * (`iss`, `sub`, `aud`, `client_id`, `client_rid`, `scope`, `kind`, `jti`, `iat`, `exp`, and
 * the credential stamp `cst` for an account), under a header with `alg`, `typ` and `kid`. It
 * checks less than the service: no session check, no reuse detection of refresh tokens, no
 * key ring. A plain `node:http` server reads the form body and hands it over.
 *
 *   node bench/oauth2-server-peer.ts <port> [loop]
 *
 * With `loop` it signs synchronously on its one event loop instead, as the bench's peer did
 * before issue 29: a process that leaves the thread pool idle, kept as a row for comparison.
 *
 * It serves `POST /token`, prints `serving` once it listens and runs until it is sent SIGTERM.
 */
import {
  createHash,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
  sign,
  timingSafeEqual,
} from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import OAuth2Server, {
  type Client,
  OAuthError,
  type RefreshToken,
  Request,
  Response,
  type Token,
  type User,
} from '@node-oauth/oauth2-server';
import bcrypt from 'bcryptjs';
import { thumbprint } from '../src/oauth/key-ring-store.ts';
import { FRONTEND_CLIENT, SEEDED_USER } from '../test/support/http.ts';

/** The service's default APP_URL, its `iss` and `aud`. */
const ISSUER = 'http://localhost:8080';
const ACCESS_TOKEN_TTL = 900;
const SCOPES = ['api'];

const digest = (secret: string) => createHash('sha256').update(secret).digest();

interface PeerUser extends User {
  id: string;
  kind: 'user' | 'client';
  /** The credential stamp of an account's session: 22 characters, as the service's. */
  cst?: string;
}

function serve(port: number, bcryptCost: number, onLoop: boolean): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = thumbprint(publicKey);
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid })).toString('base64url');
  const client: Client = {
    id: randomUUID(),
    name: FRONTEND_CLIENT.client_id,
    secretDigest: digest(FRONTEND_CLIENT.client_secret),
    grants: ['password', 'refresh_token', 'client_credentials'],
  };
  const user: PeerUser & { passwordHash: string } = {
    id: randomUUID(),
    kind: 'user',
    cst: digest(randomUUID()).toString('base64url').slice(0, 22),
    passwordHash: bcrypt.hashSync(SEEDED_USER.password, bcryptCost),
  };
  const refreshTokens = new Map<string, RefreshToken>();

  const signature = (input: Buffer, key: KeyObject): Promise<Buffer> =>
    onLoop
      ? Promise.resolve(sign('sha256', input, key))
      : new Promise((resolve, reject) =>
          sign('sha256', input, key, (error, signed) => (error ? reject(error) : resolve(signed))),
        );
  const signed = async (key: KeyObject, claims: Record<string, unknown>) => {
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${input}.${(await signature(Buffer.from(input), key)).toString('base64url')}`;
  };

  // Only the token endpoint is served, so the model has no getAccessToken (authenticate's).
  const model = {
    async getClient(clientId: string, clientSecret: string) {
      const presented = digest(clientSecret ?? '');
      const matches = timingSafeEqual(presented, client.secretDigest as Buffer);
      return clientId === client.name && matches ? client : null;
    },
    async getUser(username: string, password: string) {
      if (username !== SEEDED_USER.username) return null;
      return (await bcrypt.compare(password, user.passwordHash)) ? user : null;
    },
    async getUserFromClient(of: Client): Promise<PeerUser> {
      return { id: of.id, kind: 'client' };
    },
    async validateScope(_user: User, _client: Client, scope?: string[]) {
      return scope?.every((name) => SCOPES.includes(name)) ? scope : false;
    },
    async generateAccessToken(of: Client, holder: User, scope: string[]) {
      const now = Math.floor(Date.now() / 1000);
      const { id, kind, cst } = holder as PeerUser;
      return signed(privateKey, {
        client_id: of.name,
        client_rid: of.id,
        scope: scope.join(' '),
        kind,
        ...(cst === undefined ? {} : { cst }),
        iss: ISSUER,
        aud: ISSUER,
        sub: id,
        jti: randomUUID(),
        iat: now,
        exp: now + ACCESS_TOKEN_TTL,
      });
    },
    async saveToken(token: Token, of: Client, holder: User): Promise<Token> {
      const saved = { ...token, client: of, user: holder };
      if (token.refreshToken) refreshTokens.set(token.refreshToken, saved as RefreshToken);
      return saved;
    },
    async getRefreshToken(refreshToken: string) {
      return refreshTokens.get(refreshToken) ?? null;
    },
    async revokeToken(token: RefreshToken) {
      return refreshTokens.delete(token.refreshToken);
    },
  };
  const oauth = new OAuth2Server({
    model: model as unknown as OAuth2Server.ServerOptions['model'],
    accessTokenLifetime: ACCESS_TOKEN_TTL,
    refreshTokenLifetime: 30 * 24 * 3600,
  });

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => void answer(req, res));
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const response = new Response();
    if (req.url !== '/token') {
      response.status = 404;
      response.body = { error: 'not_found' };
    } else {
      const request = new Request({
        method: req.method ?? '',
        headers: req.headers as Record<string, string>,
        query: {},
        body: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
      });
      await oauth.token(request, response).catch((error: unknown) => {
        if (!(error instanceof OAuthError)) throw error;
      });
    }
    res.writeHead(response.status ?? 200, { ...response.headers, 'content-type': 'application/json' });
    res.end(JSON.stringify(response.body));
  }
  return new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
}

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const signing = process.argv[3];
  if (!Number.isInteger(port) || (signing !== undefined && signing !== 'loop')) {
    throw new Error('usage: node bench/oauth2-server-peer.ts <port> [loop]');
  }
  await serve(port, Number(process.env.BCRYPT_COST ?? 10), signing === 'loop');
  process.stdout.write('serving\n');
  process.once('SIGTERM', () => process.exit(0));
}

if (import.meta.main) await main();
