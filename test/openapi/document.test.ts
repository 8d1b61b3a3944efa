import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { parse } from 'yaml';
import { type Config, loadConfig } from '../../src/config.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { buildOpenApiDocument, openApiPath, TOKEN_ROUTE_NAMES, toYaml } from '../../src/openapi/document.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ENV = { APP_URL: 'https://api.example.test', APP_NAME: 'Example API', APP_VERSION: '3.2.1' };

/** The document is JSON that the tests walk freely; a type per member would only restate the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, navigated by the assertions below
type Json = any;
type Operation = Record<string, Json>;

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

  before(async () => {
    // The live route table of the running application: whatever routes it has today.
    server = await startTestServer({ env: ENV });
    routes = server.app.routes;
    config = loadConfig(ENV, readPackageInfo());
    document = buildOpenApiDocument(routes, config);
  });
  after(() => server.close());

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
    const withQuery = routes.filter((route) => route.query);
    assert.ok(withQuery.some((route) => route.path === '/users' && route.method === 'GET'));
    for (const route of withQuery) {
      const declared = (operationOf(document, route)?.parameters ?? []).filter(
        (parameter: { in: string }) => parameter.in === 'query',
      );
      assert.deepEqual(
        declared.map((parameter: { name: string }) => parameter.name).sort(),
        ['limit', 'page', 'sort', 'status'],
        route.name,
      );
      for (const parameter of declared) {
        assert.equal(parameter.required, false);
        assert.ok(parameter.schema && parameter.description, `${route.name} ${parameter.name}`);
      }
    }
  });

  test('every declared response is documented, problems as application/problem+json, plus a 500 problem', () => {
    for (const route of routes) {
      const operation = operationOf(document, route) ?? {};
      for (const [status, spec] of Object.entries(route.responses)) {
        const documented = operation.responses[status];
        assert.ok(documented, `${route.name} ${status}`);
        assert.equal(documented.description, spec.description);
        if (spec.schema)
          assert.ok(documented.content[spec.contentType ?? 'application/json'], `${route.name} ${status}`);
        if (Number(status) >= 400) {
          assert.deepEqual(documented.content[spec.contentType ?? 'application/problem+json'].schema, {
            $ref: '#/components/schemas/Problem',
          });
        }
      }
      const unexpected = route.responses[500]?.contentType ?? 'application/problem+json';
      assert.ok(operation.responses['500'].content[unexpected]);
    }
  });

  test('request bodies: the route schema, and for the token routes a oneOf of the enabled grants', () => {
    for (const route of routes) {
      const operation = operationOf(document, route) ?? {};
      if (TOKEN_ROUTE_NAMES.includes(route.name)) {
        for (const type of ['application/json', 'application/x-www-form-urlencoded']) {
          const schema = operation.requestBody.content[type].schema;
          assert.equal(schema.discriminator.propertyName, 'grant_type');
          assert.deepEqual(Object.keys(schema.discriminator.mapping).sort(), [...config.grants].sort());
          assert.equal(schema.oneOf.length, config.grants.size);
        }
      } else if (route.body) {
        assert.ok(operation.requestBody.content['application/json'].schema, route.name);
      } else {
        assert.equal(operation.requestBody, undefined, route.name);
      }
    }
    assert.ok(
      routes.some((route) => TOKEN_ROUTE_NAMES.includes(route.name)),
      'the token routes are still named as the generator expects',
    );
    const errorReport = routes.find((route) => route.name === 'error-report');
    assert.deepEqual(
      errorReport && operationOf(document, errorReport)?.requestBody.content['application/json'].schema,
      { $ref: '#/components/schemas/ErrorReport' },
    );
  });

  test('only the enabled grants are documented', () => {
    const narrow = buildOpenApiDocument(
      routes,
      loadConfig({ ...ENV, OAUTH_GRANTS: 'password,refresh_token' }, readPackageInfo()),
    );
    const schema = narrow.paths['/security/generate-token']?.post?.requestBody as Record<string, Json>;
    assert.deepEqual(Object.keys(schema.content['application/json'].schema.discriminator.mapping).sort(), [
      'password',
      'refresh_token',
    ]);
  });

  test('security: bearer JWT and the OAuth2 password flow; public routes need none', () => {
    const { securitySchemes } = document.components;
    assert.deepEqual(securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: securitySchemes.bearerAuth.description,
    });
    assert.equal(securitySchemes.oauth2.type, 'oauth2');
    assert.equal(securitySchemes.oauth2.flows.password.tokenUrl, '/security/generate-token');
    assert.equal(securitySchemes.oauth2.flows.password.refreshUrl, '/security/refresh-token');
    assert.deepEqual(Object.keys(securitySchemes.oauth2.flows.password.scopes), ['api']);
    for (const route of routes) {
      const { security } = operationOf(document, route) ?? {};
      if (route.permission === 'public') assert.deepEqual(security, [], route.name);
      else assert.deepEqual(security, [{ bearerAuth: [] }, { oauth2: ['api'] }], route.name);
    }
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
});
