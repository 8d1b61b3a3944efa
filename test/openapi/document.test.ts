import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type TSchema, Type } from '@sinclair/typebox';
import { parse } from 'yaml';
import type { Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { routeTable } from '../../src/http/routes/index.ts';
import { API_SCOPE } from '../../src/oauth/scope.ts';
import { buildOpenApiDocument, documentedRoutes, openApiPath, toYaml } from '../../src/openapi/document.ts';
import { SchemaRegistry } from '../../src/openapi/schema-registry.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { compileValidator } from '../../src/validation.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);

const ENV = { APP_URL: 'https://api.example.test', APP_NAME: 'Example API', APP_VERSION: '3.2.1' };

/** The document is JSON that the tests walk freely; a type per member would only restate the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, navigated by the assertions below
type Json = any;
type Operation = Record<string, Json>;

/** The token endpoint's routes: the ones answering errors the OAuth way. */
const isTokenRoute = (route: AnyRoute) => route.errors === 'oauth';

/** The document of the service with these grants enabled (the route table depends on them). */
function documentWith(grants: string): Json {
  const config = loadConfig({ ...ENV, OAUTH_GRANTS: grants }, readPackageInfo());
  return buildOpenApiDocument(routeTable(config.grants), config);
}

function operationOf(document: Record<string, Json>, route: AnyRoute): Operation | undefined {
  return document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
}

/** Every `$ref` in the document, with where it was found. */
function references(node: unknown, at = '#'): [string, string][] {
  if (Array.isArray(node)) return node.flatMap((item, index) => references(item, `${at}/${index}`));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]): [string, string][] =>
    key === '$ref' && typeof value === 'string' ? [[value, at]] : references(value, `${at}/${key}`),
  );
}

function resolve(document: unknown, pointer: string): unknown {
  return pointer
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], document);
}

describe('OpenAPI document', () => {
  let server: TestServer;
  let config: Config;
  let routes: readonly AnyRoute[];
  let document: Record<string, Json>;

  let workDir: string;

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
    // The live route table of the running application: whatever routes it has today.
    server = await startTestServer({ env: ENV });
    // The API's routes: the account pages are left out (documentedRoutes), as a test below shows.
    routes = documentedRoutes(server.app.routes);
    config = loadConfig(ENV, readPackageInfo());
    document = buildOpenApiDocument(routes, config);
  });
  after(async () => {
    await server.close();
    await rm(workDir, { recursive: true, force: true });
  });

  test('validates against the OpenAPI 3.1 schema, as an object and as the YAML the CLI writes', async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    assert.deepEqual(result, { valid: true });
    assert.equal(validator.version, '3.1');
    const fromYaml = await new Validator().validate(toYaml(document as never));
    assert.deepEqual(fromYaml, { valid: true });
    assert.deepEqual(parse(toYaml(document as never)), document, 'YAML holds the same document');
    assert.doesNotMatch(toYaml(document as never), /[&*]a\d+\b/, 'no YAML anchors or aliases');
    const broken = {
      ...document,
      components: { ...document.components, securitySchemes: { x: { type: 'nope' } } },
    };
    assert.equal(
      (await new Validator().validate(broken)).valid,
      false,
      'the validator does refuse a broken document',
    );
  });

  test('servers[0] is APP_URL; info comes from the configuration', () => {
    assert.equal(document.servers[0].url, 'https://api.example.test');
    assert.equal(document.info.title, 'Example API');
    assert.equal(document.info.version, '3.2.1');
    assert.match(document.openapi, /^3\.1\.\d+$/);
  });

  test('every route of the table appears, under its method and path, and nothing else', () => {
    assert.ok(routes.length >= 4);
    for (const route of routes) {
      const operation = operationOf(document, route);
      assert.ok(operation, `${route.method} ${route.path} is documented`);
      assert.equal(operation['x-route-name'], route.name);
      assert.equal(operation.summary, route.summary);
      assert.deepEqual(operation.tags, [...route.tags]);
    }
    const count = Object.values(document.paths as Record<string, object>).reduce(
      (sum, operations) => sum + Object.keys(operations).length,
      0,
    );
    assert.equal(count, routes.length);
    const ids = routes.map((route) => operationOf(document, route)?.operationId);
    assert.equal(new Set(ids).size, routes.length, 'operationIds are unique');
  });

  test('the account pages are not API operations: their paths document only the API, as before', () => {
    const pages = server.app.routes.filter((route) => route.forBrowsers);
    assert.ok(pages.length >= 10, 'a page and its form per account page');
    for (const page of pages) {
      const operation = operationOf(document, page);
      assert.notEqual(operation?.['x-route-name'], page.name, `${page.name} is not documented`);
    }
    const reset = document.paths['/account/reset-password/{hash}'];
    assert.deepEqual(Object.keys(reset).sort(), ['get', 'patch']);
    assert.equal(reset.get['x-route-name'], 'account::check-password-reset');
    assert.equal(document.paths['/account/activate/{hash}'].get, undefined);
  });

  test('path parameters use OpenAPI syntax and are declared', () => {
    for (const route of routes.filter((candidate) => candidate.path.includes(':'))) {
      const names = [...route.path.matchAll(/:(\w+)/g)].map((match) => match[1]);
      const operation = operationOf(document, route);
      assert.deepEqual(
        operation?.parameters.map((parameter: { name: string; in: string; required: boolean }) => [
          parameter.name,
          parameter.in,
          parameter.required,
        ]),
        names.map((name) => [name, 'path', true]),
      );
      assert.ok(!openApiPath(route.path).includes(':'));
    }
    assert.equal(openApiPath('/users/:id/activate'), '/users/{id}/activate');
  });

  test('query parameters of a route schema are declared, optional, with their own schema', () => {
    const withQuery = routes.filter((route) => route.query && route.checkedBy !== 'handler');
    assert.ok(withQuery.some((route) => route.path === '/users' && route.method === 'GET'));
    for (const route of withQuery) {
      const declared = (operationOf(document, route)?.parameters ?? []).filter(
        (parameter: { in: string }) => parameter.in === 'query',
      );
      assert.deepEqual(
        declared.map((parameter: { name: string }) => parameter.name).sort(),
        route.path === '/admins'
          ? ['limit', 'page', 'role', 'search', 'sort', 'status']
          : ['limit', 'page', 'search', 'sort', 'status'],
        route.name,
      );
      for (const parameter of declared) {
        assert.equal(parameter.required, false);
        assert.ok(parameter.schema && parameter.description, `${route.name} ${parameter.name}`);
      }
    }
  });

  test('the account collections: sort, status and role are enums, search is bounded text', () => {
    const fields = ['identity', 'firstName', 'lastName', 'status', 'createdAt', 'updatedAt', 'id'];
    for (const path of ['/users', '/admins']) {
      const parameters: { name: string; schema: Json }[] = document.paths[path].get.parameters;
      const schema = (name: string) => parameters.find((parameter) => parameter.name === name)?.schema;
      assert.deepEqual(schema('sort'), {
        type: 'string',
        enum: fields.flatMap((field) => [field, `-${field}`]),
      });
      assert.deepEqual(schema('status'), {
        type: 'string',
        enum: ['pending', 'active', 'inactive', 'deleted'],
      });
      assert.deepEqual(
        schema('role'),
        path === '/admins' ? { type: 'string', enum: ['admin', 'superuser'] } : undefined,
      );
      assert.deepEqual(schema('search'), {
        type: 'string',
        maxLength: 320,
        pattern: '^[^\\u0000-\\u001f\\u007f]*$',
      });
    }
  });

  test('the authorization request: its parameters, required but for state', () => {
    const authorize = routes.find((route) => route.name === 'security::authorize');
    const declared = operationOf(document, authorize as AnyRoute)?.parameters ?? [];
    assert.deepEqual(
      declared.map((parameter: { name: string; in: string; required: boolean }) => [
        parameter.name,
        parameter.in,
        parameter.required,
      ]),
      [
        ['response_type', 'query', true],
        ['client_id', 'query', true],
        ['redirect_uri', 'query', true],
        ['scope', 'query', true],
        ['state', 'query', false],
        ['code_challenge', 'query', true],
        ['code_challenge_method', 'query', true],
      ],
    );
  });

  test('page and limit are documented as integers, while their strings are checked as before', () => {
    const list = routes.find((route) => route.name === 'user::list');
    const parameter = (name: string) =>
      operationOf(document, list as AnyRoute)?.parameters.find((p: { name: string }) => p.name === name);
    assert.deepEqual(parameter('page').schema, { type: 'integer', minimum: 1, maximum: 999999 });
    assert.deepEqual(parameter('limit').schema, { type: 'integer', minimum: 1, maximum: 100 });
    const query = compileValidator(list?.query as TSchema);
    for (const accepted of [{ page: '1' }, { page: '999999' }, { limit: '1' }, { limit: '100' }]) {
      assert.equal(query.errors(accepted), null, JSON.stringify(accepted));
    }
    for (const [name, value] of [
      ['page', '0'],
      ['page', '01'],
      ['page', '1000000'],
      ['page', '-1'],
      ['page', '+1'],
      ['page', '1.0'],
      ['page', '1e2'],
      ['page', ' 1'],
      ['page', '0x10'],
      ['limit', '101'],
      ['limit', 'ten'],
    ] as const) {
      assert.deepEqual(Object.keys(query.errors({ [name]: value }) ?? {}), [name], `${name}=${value}`);
    }
    assert.deepEqual(query.errors({ page: 2 }), { page: ['Must be a whole number from 1'] }, 'a string only');
  });

  test('every declared response is documented, problems as application/problem+json, plus a 500 problem', () => {
    for (const route of routes) {
      const operation = operationOf(document, route) ?? {};
      for (const [status, spec] of Object.entries(route.responses)) {
        const documented = operation.responses[status];
        assert.ok(documented, `${route.name} ${status}`);
        assert.equal(documented.description, spec.description);
        for (const type of spec.schema ? [spec.contentType ?? 'application/json'].flat() : [])
          assert.ok(documented.content[type], `${route.name} ${status} ${type}`);
        if (Number(status) >= 400 && route.errors === 'page') {
          assert.deepEqual(documented.content['text/html'].schema.type, 'string', `${route.name} ${status}`);
        } else if (Number(status) >= 400) {
          const problem = isTokenRoute(route) ? 'TokenError' : 'Problem';
          assert.deepEqual(
            documented.content[String(spec.contentType ?? 'application/problem+json')].schema,
            {
              $ref: `#/components/schemas/${problem}`,
            },
          );
        }
      }
      const unexpected = String(route.responses[500]?.contentType ?? 'application/problem+json');
      assert.ok(operation.responses['500'].content[unexpected]);
    }
  });

  test('request bodies: the route schema, and for the token routes a oneOf of the enabled grants', () => {
    for (const route of routes) {
      const operation = operationOf(document, route) ?? {};
      if (isTokenRoute(route)) {
        for (const type of ['application/json', 'application/x-www-form-urlencoded']) {
          const schema = operation.requestBody.content[type].schema;
          assert.equal(schema.discriminator.propertyName, 'grant_type');
          assert.deepEqual(Object.keys(schema.discriminator.mapping).sort(), [...config.grants].sort());
          assert.equal(schema.oneOf.length, config.grants.size);
        }
      } else if (route.upload) {
        for (const type of Object.keys(route.upload))
          assert.ok(operation.requestBody.content[type].schema, `${route.name} ${type}`);
      } else if (route.body) {
        const [mediaType = ''] = route.bodyMediaTypes ?? ['application/json'];
        assert.ok(operation.requestBody.content[mediaType].schema, route.name);
      } else {
        assert.equal(operation.requestBody, undefined, route.name);
      }
    }
    assert.deepEqual(
      routes.filter(isTokenRoute).map((route) => route.name),
      ['security::generate-token', 'security::refresh-token'],
    );
    const errorReport = routes.find((route) => route.name === 'error-report');
    assert.deepEqual(
      errorReport && operationOf(document, errorReport)?.requestBody.content['application/json'].schema,
      { $ref: '#/components/schemas/ErrorReport' },
    );
  });

  test('only the enabled grants are documented', () => {
    const narrow = documentWith('password,refresh_token');
    assert.equal(narrow.paths['/security/authorize'], undefined, 'no sign-in page without its grant');
    assert.equal(narrow.components.securitySchemes.oauth2.flows.authorizationCode, undefined);
    const schema = narrow.paths['/security/generate-token']?.post?.requestBody as Record<string, Json>;
    assert.deepEqual(Object.keys(schema.content['application/json'].schema.discriminator.mapping).sort(), [
      'password',
      'refresh_token',
    ]);
  });

  test('security: bearer JWT and the OAuth2 flows of the enabled grants; public routes need none', () => {
    const { securitySchemes } = document.components;
    assert.deepEqual(securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: securitySchemes.bearerAuth.description,
    });
    assert.equal(securitySchemes.oauth2.type, 'oauth2');
    assert.deepEqual(securitySchemes.oauth2.flows, {
      authorizationCode: {
        authorizationUrl: '/security/authorize',
        tokenUrl: '/security/generate-token',
        refreshUrl: '/security/refresh-token',
        scopes: { api: 'Access to the API' },
      },
      password: {
        tokenUrl: '/security/generate-token',
        refreshUrl: '/security/refresh-token',
        scopes: { api: 'Access to the API' },
      },
      clientCredentials: { tokenUrl: '/security/generate-token', scopes: { api: 'Access to the API' } },
    });
    for (const route of routes) {
      const { security } = operationOf(document, route) ?? {};
      if (route.permission === 'public') assert.deepEqual(security, [], route.name);
      else assert.deepEqual(security, [{ bearerAuth: [] }, { oauth2: ['api'] }], route.name);
    }

    const withGrants = documentWith;
    assert.deepEqual(Object.keys(withGrants('password').components.securitySchemes.oauth2.flows), [
      'password',
    ]);
    assert.equal(
      withGrants('password').components.securitySchemes.oauth2.flows.password.refreshUrl,
      undefined,
    );
    assert.deepEqual(withGrants('client_credentials,refresh_token').components.securitySchemes.oauth2.flows, {
      clientCredentials: { tokenUrl: '/security/generate-token', scopes: { api: 'Access to the API' } },
    });
    const noFlow = withGrants('refresh_token');
    assert.equal(noFlow.components.securitySchemes.oauth2, undefined, 'no flow, no oauth2 scheme');
    assert.deepEqual(noFlow.paths['/users'].get.security, [{ bearerAuth: [] }]);
  });

  test('the OAuth flows take their URLs from the route table, and their scopes from the seeded scope', () => {
    const moved: Record<string, string> = {
      'security::generate-token': '/oauth/token',
      'security::refresh-token': '/oauth/refresh',
      'security::authorize': '/oauth/authorize',
    };
    const table = routes.map((route) => ({ ...route, path: moved[route.name] ?? route.path }));
    const { securitySchemes } = (buildOpenApiDocument(table, config) as Json).components;
    assert.deepEqual(securitySchemes.oauth2.flows.authorizationCode, {
      authorizationUrl: '/oauth/authorize',
      tokenUrl: '/oauth/token',
      refreshUrl: '/oauth/refresh',
      scopes: { [API_SCOPE.name]: API_SCOPE.description },
    });
    assert.equal(securitySchemes.oauth2.flows.clientCredentials.tokenUrl, '/oauth/token');
    assert.match(securitySchemes.bearerAuth.description, /\/oauth\/token or \/oauth\/refresh/);
    assert.match(securitySchemes.oauth2.description, /signs in on \/oauth\/authorize/);
  });

  test('an OAuth client documents until when its previous secret works; a rotation, its overlap', () => {
    const client = document.components.schemas.OAuthClient;
    assert.deepEqual(client.properties.previousSecretExpiresAt.anyOf, [
      { type: 'string', format: 'date-time' },
      { type: 'null' },
    ]);
    assert.ok(client.required.includes('previousSecretExpiresAt'));
    const update =
      document.paths['/oauth-clients/{name}'].patch.requestBody.content['application/json'].schema;
    const body = update.$ref ? document.components.schemas[update.$ref.split('/').pop()] : update;
    assert.deepEqual(
      { ...body.properties.previousSecretOverlapSeconds, description: undefined },
      { type: 'integer', minimum: 0, maximum: 604800, default: 86400, description: undefined },
    );
    assert.equal(body.properties.retirePreviousSecret.type, 'boolean');
    assert.equal(body.properties.rotateSecret.type, 'boolean');
  });

  test("the token endpoint's summary names every enabled grant", () => {
    const summary = (grants: string) => documentWith(grants).paths['/security/generate-token'].post.summary;
    assert.equal(
      summary('password,refresh_token,client_credentials'),
      'Exchange credentials for tokens (grant_type password, refresh_token or client_credentials)',
    );
    assert.equal(
      summary('client_credentials'),
      'Exchange credentials for tokens (grant_type client_credentials)',
    );
    assert.equal(summary(''), 'Exchange credentials for tokens (no grant is enabled)');
  });

  test('documented headers: Location on 201s, WWW-Authenticate on 401s, no caching of token answers, Allow on 405', () => {
    for (const route of routes) {
      const { responses } = operationOf(document, route) ?? {};
      const token = isTokenRoute(route);
      if (responses['201'] && route.name !== 'error-report') {
        assert.equal(responses['201'].headers?.Location?.required, true, route.name);
      }
      if (responses['401']) {
        assert.equal(responses['401'].headers['WWW-Authenticate'].required, !token, route.name);
      }
      for (const [status, response] of Object.entries(responses as Record<string, Json>)) {
        if (!token) continue;
        assert.deepEqual(
          response.headers['Cache-Control'].schema,
          { const: 'no-store', type: 'string' },
          status,
        );
        assert.deepEqual(response.headers.Pragma.schema, { const: 'no-cache', type: 'string' }, status);
      }
    }
    const methodNotAllowed = document.components.responses.MethodNotAllowed;
    assert.equal(methodNotAllowed.headers.Allow.required, true);
    assert.ok(methodNotAllowed.content['application/problem+json']);
  });

  test('deprecated routes are marked and document the Deprecation, Sunset and Link headers', () => {
    assert.ok(Object.keys(config.deprecations).length > 0, 'GET / is deprecated by default');
    for (const route of routes) {
      const operation = operationOf(document, route) ?? {};
      if (!config.deprecations[route.name]) {
        assert.equal(operation.deprecated, undefined, route.name);
        continue;
      }
      assert.equal(operation.deprecated, true);
      for (const response of Object.values(operation.responses) as Record<string, Json>[]) {
        assert.deepEqual(Object.keys(response.headers), ['Deprecation', 'Sunset', 'Link']);
      }
    }
    assert.deepEqual(Object.keys(document.components.headers), ['Deprecation', 'Sunset', 'Link']);
  });

  test('schemas with an $id are components, referenced by $ref; every reference resolves', () => {
    const schemas = document.components.schemas;
    for (const name of ['Problem', 'TokenResponse', 'ErrorReport']) assert.ok(schemas[name], name);
    if (
      routes.some((route) => Object.values(route.responses).some((spec) => spec.schema?.$id === 'Account'))
    ) {
      assert.ok(schemas.Account);
    }
    assert.doesNotMatch(JSON.stringify(document), /"\$id"/, 'no $id left inline');
    const found = references(document);
    assert.ok(found.length > 0);
    for (const [target, at] of found) assert.ok(resolve(document, target), `${target} (at ${at}) resolves`);
    const tokenRoute = routes.find((route) => route.name === 'security::generate-token');
    assert.deepEqual(
      tokenRoute && operationOf(document, tokenRoute)?.responses['200'].content['application/json'].schema,
      {
        $ref: '#/components/schemas/TokenResponse',
      },
    );
  });

  test("only JSON Schema 2020-12 and OpenAPI keywords reach the document; the validator's own stay out", () => {
    assert.doesNotMatch(JSON.stringify(document), /"errorMessage"/);
    const registry = new SchemaRegistry();
    assert.deepEqual(
      registry.use(
        Type.Object({
          errorMessage: Type.String({ errorMessage: 'Must be text', description: 'A property' }),
        }),
      ),
      {
        type: 'object',
        required: ['errorMessage'],
        properties: { errorMessage: { type: 'string', description: 'A property' } },
      },
      'a property may have any name; the keyword is dropped',
    );
    assert.throws(() => registry.use(Type.String({ nullable: true })), /keyword "nullable" \(at #\)/);
    assert.throws(
      () => registry.use(Type.Object({ pair: Type.Tuple([Type.String()]) })),
      /keyword "items" \(at #\/properties\/pair\/items\) holds a list, as in draft-07/,
      'draft-07 tuples would mean something else in 2020-12',
    );
  });

  test('redocly lint (recommended rules, run offline) finds no error', async (t) => {
    const lint = async (candidate: unknown) => {
      const file = join(workDir, 'openapi.yaml');
      await writeFile(file, toYaml(candidate as never));
      return redoclyLint(file);
    };
    const result = await lint(document);
    assert.equal(result.totals.errors, 0, JSON.stringify(result.problems, null, 2));
    for (const problem of result.problems)
      t.diagnostic(`${problem.severity} ${problem.ruleId}: ${problem.message}`);

    const broken = structuredClone(document);
    broken.components.schemas.Problem.properties.type.errorMessage = 'leaked';
    assert.ok((await lint(broken)).totals.errors > 0, 'the lint does refuse a non-standard keyword');
  });
});

/**
 * Runs the redocly CLI of node_modules with the repository's redocly.yaml. Telemetry is off
 * both there and in the environment, and the update check is off: it reaches no network.
 */
async function redoclyLint(file: string): Promise<{
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; severity: string; message: string }[];
}> {
  const cli = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));
  const config = fileURLToPath(new URL('../../redocly.yaml', import.meta.url));
  const { stdout } = await run(
    process.execPath,
    [cli, 'lint', file, '--config', config, '--format', 'json'],
    {
      env: { PATH: process.env.PATH ?? '', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return JSON.parse(stdout);
}
