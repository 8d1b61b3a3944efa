/**
 * The deployment files, checked without a Docker engine: what docker-compose.yml names exists,
 * the app is reachable only through nginx, the images are the official ones, and the
 * Dockerfile builds an unprivileged Node.js 24 image without development packages.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { REPO_ROOT } from '../support/processes.ts';

type Service = {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  env_file?: (string | { path: string; required?: boolean })[] | string;
  environment?: Record<string, string> | string[];
  volumes?: string[];
  ports?: string[];
  command?: string[] | string;
  depends_on?: Record<string, unknown> | string[];
  profiles?: string[];
};

const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const template = readFileSync(join(REPO_ROOT, 'nginx/templates/default.conf.template'), 'utf8');

function service(name: string): Service {
  const found = compose.services[name];
  assert.ok(found, `service ${name} is defined`);
  return found;
}

function environment(svc: Service): Record<string, string> {
  if (Array.isArray(svc.environment)) {
    return Object.fromEntries(svc.environment.map((entry) => entry.split(/=(.*)/s).slice(0, 2)));
  }
  return svc.environment ?? {};
}

/** `source:target[:mode]` of a service's volume entries. */
function mounts(svc: Service): { source: string; target: string }[] {
  return (svc.volumes ?? []).map((entry) => {
    const [source = '', target = ''] = entry.split(':');
    return { source, target };
  });
}

describe('docker-compose.yml', () => {
  test('defines app, mongo, redis and nginx', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['app', 'mongo', 'nginx', 'redis']);
  });

  test('every named volume a service mounts is declared, and every host path exists', () => {
    for (const [name, svc] of Object.entries(compose.services)) {
      for (const { source } of mounts(svc)) {
        if (source.startsWith('.') || source.startsWith('/')) {
          assert.ok(existsSync(join(REPO_ROOT, source)), `${name} mounts ${source}, which exists`);
        } else {
          assert.ok(source in (compose.volumes ?? {}), `${name} mounts volume ${source}, which is declared`);
        }
      }
    }
  });

  test('the app is built from the Dockerfile and reads env files that exist', () => {
    const app = service('app');
    const context = typeof app.build === 'string' ? app.build : app.build?.context;
    assert.equal(context, '.');
    const entries = Array.isArray(app.env_file) ? app.env_file : [app.env_file ?? ''];
    const files = entries.map((entry) =>
      typeof entry === 'string' ? { path: entry, required: true } : entry,
    );
    assert.ok(files.length > 0);
    for (const file of files) {
      if (file.required !== false) {
        assert.ok(existsSync(join(REPO_ROOT, file.path)), `required env file ${file.path} exists`);
      }
    }
    assert.ok(
      files.some((file) => file.path === '.env' && file.required === false),
      '.env is optional',
    );
  });

  test('every app container mounts the shared keys and log volumes where the app looks for them', () => {
    const app = service('app');
    const env = environment(app);
    const byTarget = new Map(mounts(app).map(({ source, target }) => [target, source]));
    assert.equal(byTarget.get(env.KEYS_DIR ?? ''), 'keys');
    assert.equal(byTarget.get(env.LOG_DIR ?? ''), 'log');
    assert.match(dockerfile, new RegExp(`KEYS_DIR=${env.KEYS_DIR}\\b`), 'the image agrees on KEYS_DIR');
    assert.match(dockerfile, new RegExp(`LOG_DIR=${env.LOG_DIR}\\b`), 'the image agrees on LOG_DIR');
  });

  test('the app uses the compose MongoDB and Redis and publishes no host port (so it scales)', () => {
    const app = service('app');
    const env = environment(app);
    assert.match(env.MONGODB_URL ?? '', /mongodb:\/\/mongo:27017\//);
    assert.match(env.REDIS_URL ?? '', /redis:\/\/redis:6379/);
    assert.equal(app.ports, undefined);
    assert.equal(
      app.profiles,
      undefined,
      'the app runs by default; the CLI is `docker compose run --rm app ...`',
    );
  });

  test('mongo and redis are the official images with persistent data; redis keeps an append-only file', () => {
    const mongo = service('mongo');
    const redis = service('redis');
    assert.match(mongo.image ?? '', /^mongo:\d/);
    assert.match(redis.image ?? '', /^redis:\d/);
    assert.ok(mounts(mongo).some(({ target }) => target === '/data/db'));
    assert.ok(mounts(redis).some(({ target }) => target === '/data'));
    const command = Array.isArray(redis.command) ? redis.command.join(' ') : (redis.command ?? '');
    assert.match(command, /--appendonly yes/);
  });

  test('nginx is the official image, publishes 80 and 443, and gets the template and certificates', () => {
    const nginx = service('nginx');
    assert.match(nginx.image ?? '', /^nginx(:|$)/);
    const published = (nginx.ports ?? []).map((port) => String(port));
    assert.ok(published.includes('80:80'));
    assert.ok(published.includes('443:443'));
    const targets = new Map(mounts(nginx).map(({ source, target }) => [target, source]));
    assert.equal(targets.get('/etc/nginx/templates'), './nginx/templates');
    assert.equal(targets.get('/etc/nginx/certs'), './nginx/certs');
  });

  test('nginx gives every placeholder of the template a value, and proxies to the app service', () => {
    const env = environment(service('nginx'));
    const placeholders = new Set(
      [...template.matchAll(/\$\{(NGINX_[A-Z0-9_]+)\}/g)].map((match) => match[1]),
    );
    assert.ok(placeholders.size > 0);
    const filter = new RegExp(env.NGINX_ENVSUBST_FILTER ?? '.');
    for (const name of placeholders) {
      assert.ok(name && env[name] !== undefined, `nginx sets ${name}`);
      assert.match(name ?? '', filter, `${name} passes NGINX_ENVSUBST_FILTER`);
    }
    assert.equal(env.NGINX_UPSTREAM, 'app:8080 resolve');
    assert.equal(env.NGINX_RESOLVER, '127.0.0.11', "Docker's DNS, so scaled app containers are found");
    assert.equal(env.NGINX_HTTP_PORT, '80');
    assert.equal(env.NGINX_HTTPS_PORT, '443');
    assert.match(env.NGINX_TLS_CERTIFICATE ?? '', /^\/etc\/nginx\/certs\//);
    // Nothing else in the template looks like a placeholder that envsubst would blank.
    assert.doesNotMatch(template.replace(/\$\{NGINX_[A-Z0-9_]+\}/g, ''), /\$\{/);
  });
});

describe('Dockerfile', () => {
  test('builds on the official Node.js 24 image', () => {
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1]);
    assert.ok(bases.length >= 2, 'multi-stage');
    for (const base of bases) assert.match(base ?? '', /^node:24([.-]|$)/);
  });

  test('installs production packages only in the final image, and runs as the unprivileged node user', () => {
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(final, /npm install[^\n]*--omit=dev/);
    assert.match(final, /^USER node\s*$/m);
    assert.match(final, /^ENTRYPOINT \["\/app\/ops\/docker-entrypoint\.sh"\]/m);
  });

  test('neither stage fetches the Node.js that package.json pins for machines without one', () => {
    const installs = dockerfile.match(/^RUN npm install[^\n]*/gm) ?? [];
    assert.equal(installs.length, 2);
    for (const install of installs) assert.match(install, /--ignore-scripts/);
  });

  test('the entry point script exists, is executable and runs CLI commands', () => {
    const script = join(REPO_ROOT, 'ops/docker-entrypoint.sh');
    assert.ok(statSync(script).mode & 0o111, 'executable');
    const output = execFileSync('sh', [script, '--version'], { encoding: 'utf8' });
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(output.trim(), version);
  });

  test('.dockerignore keeps keys, logs, secrets and node_modules out of the build context', () => {
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['node_modules', 'keys', 'log', '.env', '.git'])
      assert.ok(ignored.includes(entry), entry);
    for (const needed of ['src', 'ops', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json']) {
      assert.ok(!ignored.includes(needed), `${needed} is in the build context`);
    }
  });
});
