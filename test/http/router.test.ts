import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Problem } from '../../src/errors.ts';
import { createRequestHandler } from '../../src/http/pipeline.ts';
import type { ErrorFormat } from '../../src/http/problem.ts';
import { type AnyRoute, defineRoute, type HttpMethod, type Services } from '../../src/http/route.ts';

/**
 * How the HTTP layer routes, pinned on tables of its own (after hono's
 * `src/router/common.case.test.ts`): which route answers, with which parameters, and what a
 * path without a route for the method gets. The subject is the pipeline as a whole, so a
 * change of router changes nothing here.
 */

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The answering route's name and parameters, or the problem's members. */
  json: Record<string, unknown>;
}

interface Served {
  send(method: string, target: string, headers?: Record<string, string>): Promise<Answer>;
  unexpected: { error: unknown; route: string | undefined }[];
  close(): Promise<void>;
}

const ORIGIN = 'https://app.example';

/** A route that answers with its name and the parameters it was handed. */
function route(method: HttpMethod, path: string, name: string, errors?: ErrorFormat): AnyRoute {
  return defineRoute({
    method,
    path,
    name,
    summary: name,
    tags: [],
    permission: 'public',
    responses: {},
    ...(errors ? { errors } : {}),
    handler: ({ params }) => ({ status: 200, body: { route: name, params } }),
  });
}

async function serve(routes: readonly AnyRoute[]): Promise<Served> {
  const unexpected: Served['unexpected'] = [];
  const server: Server = createServer(
    createRequestHandler({
      routes,
      // The routes of these tables call no service.
      services: {} as Services,
      bodyLimit: 1024,
      cors: { origins: [ORIGIN], maxAge: 600 },
      responseHeaders: {},
      deprecations: {},
      authenticate: async () => ({ role: 'guest' }),
      onUnexpectedError: (error, _req, route) => unexpected.push({ error, route: route?.name }),
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    unexpected,
    // node:http sends the request target as written: no normalization, no escaping.
    send: (method, target, headers = {}) =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path: target, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const json =
              text === '' || method === 'HEAD' ? {} : (JSON.parse(text) as Record<string, unknown>);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        });
        req.on('error', reject);
        req.end();
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Runs `define` with a server of `routes`, started before its tests and closed after them. */
function withTable(routes: readonly AnyRoute[], define: (served: () => Served) => void): void {
  let served: Served | undefined;
  before(async () => {
    served = await serve(routes);
  });
  after(() => served?.close());
  define(() => {
    if (!served) throw new Error('the server has not started');
    return served;
  });
}

describe('HTTP routing', () => {
  describe('the method and the path choose the route', () => {
    withTable(
      [route('GET', '/hello', 'get hello'), route('POST', '/hello', 'post hello'), route('GET', '/', 'home')],
      (served) => {
        test('each method of a path has its own route', async () => {
          assert.deepEqual((await served().send('GET', '/hello')).json, { route: 'get hello', params: {} });
          assert.deepEqual((await served().send('POST', '/hello')).json, { route: 'post hello', params: {} });
          assert.deepEqual((await served().send('GET', '/')).json, { route: 'home', params: {} });
        });

        test('a path no route has is 404 problem+json, whatever the method', async () => {
          for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS']) {
            const answer = await served().send(method, '/hellos');
            assert.equal(answer.status, 404, method);
            assert.equal(answer.headers['content-type'], 'application/problem+json', method);
            assert.equal(answer.json.status, 404, method);
          }
          assert.equal((await served().send('GET', '/hello/there')).status, 404);
          assert.equal((await served().send('GET', '*')).status, 404);
        });

        test('a known path without a route for the method is 405 with Allow', async () => {
          const answer = await served().send('PUT', '/hello');
          assert.equal(answer.status, 405);
          assert.equal(answer.headers.allow, 'GET, HEAD, POST');
          assert.equal(answer.headers['content-type'], 'application/problem+json');
          assert.equal(answer.json.status, 405);
          assert.equal((await served().send('DELETE', '/')).headers.allow, 'GET, HEAD');
        });

        test('HEAD is GET without the body', async () => {
          const get = await served().send('GET', '/hello');
          const head = await served().send('HEAD', '/hello');
          assert.equal(head.status, 200);
          assert.equal(head.text, '');
          assert.equal(head.headers['content-length'], get.headers['content-length']);
          assert.equal(head.headers['content-type'], get.headers['content-type']);
        });
      },
    );
  });

  describe('Allow lists the path’s methods in the order of the table, HEAD after GET', () => {
    withTable(
      [
        route('DELETE', '/things/:id', 'delete thing'),
        route('GET', '/things/:id', 'view thing'),
        route('PATCH', '/things/:id', 'update thing'),
        route('POST', '/things/:id/parts', 'add part'),
        route('GET', '/things/special', 'special thing'),
        route('PUT', '/things/special', 'replace special thing'),
        route('POST', '/token', 'token', 'oauth'),
      ],
      (served) => {
        test('on 405', async () => {
          assert.equal((await served().send('PUT', '/things/1')).headers.allow, 'DELETE, GET, HEAD, PATCH');
          assert.equal(
            (await served().send('POST', '/things/special')).headers.allow,
            'DELETE, GET, HEAD, PATCH, PUT',
          );
          assert.equal((await served().send('GET', '/things/1/parts')).headers.allow, 'POST');
          assert.equal((await served().send('HEAD', '/things/1/parts')).headers.allow, 'POST');
        });

        test('a 405 is written in the error format of the path’s route', async () => {
          const answer = await served().send('GET', '/token');
          assert.equal(answer.status, 405);
          assert.equal(answer.headers.allow, 'POST');
          assert.equal(answer.headers['content-type'], 'application/json');
          assert.equal(answer.json.error, 'invalid_request');
        });

        test('a CORS preflight is answered with the path’s methods', async () => {
          const answer = await served().send('OPTIONS', '/things/special', {
            Origin: ORIGIN,
            'Access-Control-Request-Method': 'PUT',
          });
          assert.equal(answer.status, 204);
          assert.equal(answer.text, '');
          assert.equal(answer.headers.allow, 'DELETE, GET, HEAD, PATCH, PUT');
          assert.equal(answer.headers['access-control-allow-methods'], 'DELETE, GET, HEAD, PATCH, PUT');
          assert.equal(answer.headers['access-control-allow-origin'], ORIGIN);
          const plain = await served().send('OPTIONS', '/things/1');
          assert.equal(plain.status, 204);
          assert.equal(plain.headers.allow, 'DELETE, GET, HEAD, PATCH');
          assert.equal(plain.headers['access-control-allow-methods'], undefined);
        });
      },
    );
  });

  describe('overlapping routes: the first of the table answers, with its own parameters only', () => {
    withTable(
      [
        route('GET', '/users/my-account', 'own account'),
        route('GET', '/users/:id', 'account'),
        route('GET', '/users/:id/avatar', 'avatar'),
        route('PATCH', '/users/:name', 'rename'),
        route('GET', '/:id/:action', 'action'),
        route('GET', '/posts/:id', 'post'),
        route('GET', '/pages/:id', 'page'),
      ],
      (served) => {
        test('a static route before a parametrized one that also matches', async () => {
          assert.deepEqual((await served().send('GET', '/users/my-account')).json, {
            route: 'own account',
            params: {},
          });
          assert.deepEqual((await served().send('GET', '/users/42')).json, {
            route: 'account',
            params: { id: '42' },
          });
          assert.deepEqual((await served().send('GET', '/users/42/avatar')).json, {
            route: 'avatar',
            params: { id: '42' },
          });
        });

        test('a route of another method lends no parameter', async () => {
          assert.deepEqual((await served().send('PATCH', '/users/42')).json, {
            route: 'rename',
            params: { name: '42' },
          });
          assert.deepEqual((await served().send('HEAD', '/users/42')).status, 200);
        });

        test('a later route that names the same parameter elsewhere changes nothing', async () => {
          // Both match; the later one would make `id` "get".
          assert.deepEqual((await served().send('GET', '/posts/get')).json, {
            route: 'action',
            params: { id: 'posts', action: 'get' },
          });
          assert.deepEqual((await served().send('GET', '/pages/about')).json, {
            route: 'action',
            params: { id: 'pages', action: 'about' },
          });
        });
      },
    );

    withTable(
      [
        route('GET', '/entry/:constructor', 'entry'),
        route('GET', '/posts/:id', 'post'),
        route('GET', '/:id/:action', 'action'),
        route('GET', '/:section/:page/:part', 'part'),
        route('GET', '/docs/:part/:page', 'doc'),
      ],
      (served) => {
        test('the first route keeps its values when a later one matches too', async () => {
          assert.deepEqual((await served().send('GET', '/posts/get')).json, {
            route: 'post',
            params: { id: 'get' },
          });
          assert.deepEqual((await served().send('HEAD', '/posts/get')).status, 200);
          assert.deepEqual((await served().send('GET', '/docs/intro/7')).json, {
            route: 'part',
            params: { section: 'docs', page: 'intro', part: '7' },
          });
        });

        test('a parameter may be named like a member of every object', async () => {
          assert.deepEqual((await served().send('GET', '/entry/123')).json, {
            route: 'entry',
            params: { constructor: '123' },
          });
        });
      },
    );
  });

  describe('paths as sent', () => {
    withTable([route('GET', '/hello', 'hello'), route('GET', '/files/:name', 'file')], (served) => {
      test('a path matches whatever its case; a parameter keeps the case it was sent in', async () => {
        assert.equal((await served().send('GET', '/HeLLo')).json.route, 'hello');
        assert.deepEqual((await served().send('GET', '/FILES/ReadMe')).json, {
          route: 'file',
          params: { name: 'ReadMe' },
        });
      });

      test('one trailing slash is allowed, two are not', async () => {
        assert.equal((await served().send('GET', '/hello/')).json.route, 'hello');
        assert.deepEqual((await served().send('GET', '/files/a/')).json.params, { name: 'a' });
        assert.equal((await served().send('GET', '/hello//')).status, 404);
        assert.equal((await served().send('GET', '/files//')).status, 404);
      });

      test('a parameter arrives percent-decoded; an escaped slash stays inside it', async () => {
        assert.deepEqual((await served().send('GET', '/files/a%20b')).json.params, { name: 'a b' });
        assert.deepEqual((await served().send('GET', '/files/a%2Fb')).json.params, { name: 'a/b' });
        assert.deepEqual((await served().send('GET', '/files/%C3%A9t%C3%A9')).json.params, { name: 'été' });
      });

      test('a malformed escape is left as sent, never a failure', async () => {
        assert.deepEqual((await served().send('GET', '/files/%E0%A4%A')).json.params, { name: '%E0%A4%A' });
        assert.deepEqual((await served().send('GET', '/files/100%')).json.params, { name: '100%' });
      });

      test('the route’s own segments are matched as sent, not decoded', async () => {
        assert.equal((await served().send('GET', '/h%65llo')).status, 404);
      });

      test('the query and a fragment take no part in matching', async () => {
        assert.deepEqual((await served().send('GET', '/files/a?name=b')).json.params, { name: 'a' });
        assert.equal((await served().send('GET', '/hello?')).json.route, 'hello');
        assert.equal((await served().send('GET', '/hello#top')).json.route, 'hello');
        assert.deepEqual((await served().send('GET', '/files/a#b?c')).json.params, { name: 'a' });
      });
    });
  });

  describe('a path with a page beside its API answers by Accept, and every answer there says so', () => {
    const page = (path: string, name: string) =>
      defineRoute({ ...route('GET', path, name, 'page'), forBrowsers: true });
    withTable(
      [
        page('/links/:hash', 'link page'),
        route('PATCH', '/links/:hash', 'link api'),
        page('/both/:id', 'both page'),
        route('GET', '/both/:id', 'both api'),
        route('GET', '/plain/:id', 'plain'),
      ],
      (served) => {
        const HTML = { Accept: 'text/html' };
        const JSON_ONLY = { Accept: 'application/json', Origin: ORIGIN };
        test('the page and the API of one path vary by Accept, with CORS’s Origin where it applies', async () => {
          const pageAnswer = await served().send('GET', '/both/1', HTML);
          assert.equal(pageAnswer.json.route, 'both page');
          assert.equal(pageAnswer.headers.vary, 'Accept');
          const apiAnswer = await served().send('GET', '/both/1', JSON_ONLY);
          assert.equal(apiAnswer.json.route, 'both api');
          assert.equal(apiAnswer.headers.vary, 'Accept, Origin');
        });

        test('so does a 405 where only the page answers a GET', async () => {
          assert.equal((await served().send('GET', '/links/x', HTML)).headers.vary, 'Accept');
          const refused = await served().send('GET', '/links/x', JSON_ONLY);
          assert.equal(refused.status, 405);
          assert.equal(refused.headers.vary, 'Accept, Origin');
        });

        test('a path without a page does not', async () => {
          assert.equal((await served().send('GET', '/plain/1', JSON_ONLY)).headers.vary, 'Origin');
          assert.equal((await served().send('GET', '/nowhere', JSON_ONLY)).headers.vary, 'Origin');
        });
      },
    );
  });

  describe('a failure of the route', () => {
    const failing = defineRoute({
      ...route('GET', '/broken', 'broken'),
      handler: () => {
        throw new Error('a bug');
      },
    });
    const unanswerable = defineRoute({
      ...route('GET', '/unanswerable', 'unanswerable'),
      handler: () => {
        throw new Problem(400, 'a refusal that cannot be written', { headers: { 'X-Detail': 'two\nlines' } });
      },
    });
    // A page beside the unanswerable API route, which hands a JSON request on to it.
    const pageBeside = defineRoute({ ...route('GET', '/unanswerable', 'page', 'page'), forBrowsers: true });
    withTable([failing, pageBeside, unanswerable], (served) => {
      test('is a 500 that says nothing of it, reported with its route', async () => {
        const answer = await served().send('GET', '/broken');
        assert.equal(answer.status, 500);
        assert.equal(answer.json.detail, 'An unexpected error occurred');
        assert.deepEqual(
          served().unexpected.map(({ error, route }) => [(error as Error).message, route]),
          [['a bug', 'broken']],
        );
      });

      test('that cannot be written closes the connection and is reported with its route, not the page handing it on', async () => {
        served().unexpected.length = 0;
        await assert.rejects(served().send('GET', '/unanswerable', { Accept: 'application/json' }));
        assert.deepEqual(
          served().unexpected.map(({ error, route }) => [(error as { code?: string }).code, route]),
          [['ERR_INVALID_CHAR', 'unanswerable']],
        );
      });
    });
  });
});
