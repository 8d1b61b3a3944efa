/**
 * The deployment files, checked without a Docker engine: what docker-compose.yml names exists,
 * the app is reachable only through nginx, the images are the official ones, every container
 * is limited, the healthcheck asks the backends; docker-compose.ha.yml runs the same app over a
 * replica set and Sentinel; and the Dockerfile builds an unprivileged Node.js 24 image from
 * exactly the lock file, without development packages.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { onPath } from '../support/backends.ts';
import { REPO_ROOT } from '../support/processes.ts';

type Service = {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  env_file?: (string | { path: string; required?: boolean })[] | string;
  environment?: Record<string, string> | string[];
  volumes?: string[];
  ports?: string[];
  command?: string[] | string;
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  healthcheck?: { test: string[] };
  restart?: string;
  deploy?: { resources?: { limits?: { cpus?: string; memory?: string } } };
};

type ComposeFile = { services: Record<string, Service>; volumes: Record<string, unknown> };

// `merge: true` resolves the `<<: *anchor` keys that docker-compose.ha.yml uses, as Compose does.
const readCompose = (file: string) =>
  parse(readFileSync(join(REPO_ROOT, file), 'utf8'), { merge: true }) as ComposeFile;
const compose = readCompose('docker-compose.yml');
const ha = readCompose('docker-compose.ha.yml');
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');

/** The shell commands of the RUN instructions that install packages, continuation lines joined. */
function installCommands(): string[] {
  return [...dockerfile.replace(/\\\n\s*/g, ' ').matchAll(/^RUN (.*npm ci.*)$/gm)].map(
    (match) => match[1] ?? '',
  );
}
const template = readFileSync(join(REPO_ROOT, 'nginx/templates/default.conf.template'), 'utf8');

function service(name: string, file: ComposeFile = compose): Service {
  const found = file.services[name];
  assert.ok(found, `service ${name} is defined`);
  return found;
}

function commandLine(svc: Service): string {
  return Array.isArray(svc.command) ? svc.command.join(' ') : (svc.command ?? '');
}

/** The value Compose gives `${NAME:-default}` when NAME is not set. */
function byDefault(value: string | undefined): string {
  return (value ?? '').replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
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

  test('in both files every named volume a service mounts is declared, every host path exists, and every dependency is a service', () => {
    for (const file of [compose, ha]) {
      for (const [name, svc] of Object.entries(file.services)) {
        for (const { source } of mounts(svc)) {
          if (source.startsWith('.') || source.startsWith('/')) {
            assert.ok(existsSync(join(REPO_ROOT, source)), `${name} mounts ${source}, which exists`);
          } else {
            assert.ok(source in (file.volumes ?? {}), `${name} mounts volume ${source}, which is declared`);
          }
        }
        for (const dependency of Object.keys(svc.depends_on ?? {})) {
          assert.ok(file.services[dependency], `${name} depends on ${dependency}, which is a service`);
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
    assert.match(commandLine(redis), /--appendonly yes/);
  });

  test('Redis never evicts a refresh token: a memory limit with the noeviction policy', () => {
    for (const [file, name] of [
      [compose, 'redis'],
      [ha, 'redis-1'],
      [ha, 'redis-2'],
    ] as const) {
      const command = byDefault(commandLine(service(name, file)));
      assert.match(command, /--maxmemory \d+mb\b/, name);
      assert.match(command, /--maxmemory-policy noeviction\b/, name);
    }
  });

  test('every container has CPU and memory limits; the app runs one worker per CPU of its limit', () => {
    for (const file of [compose, ha]) {
      for (const [name, svc] of Object.entries(file.services)) {
        if (svc.restart === 'no') continue; // a one-shot job
        const limits = svc.deploy?.resources?.limits;
        assert.ok(Number(byDefault(limits?.cpus)) > 0, `${name} has a CPU limit`);
        assert.match(byDefault(limits?.memory), /^\d+[mg]$/, `${name} has a memory limit`);
      }
      const app = service('app', file);
      const workers = environment(app).WORKERS;
      assert.equal(workers, app.deploy?.resources?.limits?.cpus, 'WORKERS follows the CPU limit');
      assert.equal(byDefault(workers), '2');
    }
  });

  test('the app is healthy only while its backends answer: the healthcheck runs backends:check', () => {
    for (const file of [compose, ha]) {
      const test = service('app', file).healthcheck?.test ?? [];
      assert.deepEqual(test.slice(0, 3), ['CMD', '/app/ops/docker-entrypoint.sh', 'backends:check']);
    }
    const nginx = service('nginx').depends_on ?? {};
    assert.equal(nginx.app?.condition, 'service_healthy');
  });

  test('nginx and the app read one BODY_LIMIT, and nginx runs the script that converts it', () => {
    for (const file of [compose, ha]) {
      const app = environment(service('app', file)).BODY_LIMIT;
      assert.match(app ?? '', /^\$\{BODY_LIMIT:-1mb\}$/, 'from .env, as compose reads it for both');
      assert.equal(environment(service('nginx', file)).BODY_LIMIT, app);
      const targets = new Map(mounts(service('nginx', file)).map(({ source, target }) => [target, source]));
      assert.equal(
        targets.get('/docker-entrypoint.d/10-body-limit.envsh'),
        './nginx/entrypoint/10-body-limit.envsh',
      );
    }
    const script = statSync(join(REPO_ROOT, 'nginx/entrypoint/10-body-limit.envsh'));
    assert.ok(script.mode & 0o111, 'the image sources only executable .envsh files');
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
    // The entrypoint script exports this one (test/deploy/nginx.test.ts checks its value).
    const env: Record<string, string> = {
      ...environment(service('nginx')),
      NGINX_CLIENT_MAX_BODY_SIZE: '1m',
    };
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

describe('docker-compose.ha.yml', () => {
  const sentinelConf = readFileSync(join(REPO_ROOT, 'ops/redis/sentinel.conf'), 'utf8');
  const initScript = readFileSync(join(REPO_ROOT, 'ops/mongo/init-replica-set.js'), 'utf8');
  const members = ['m1', 'm2', 'm3'];
  const sentinels = ['s1', 's2', 's3'];

  test('defines the app and nginx, three MongoDB members with their init job, two Redis servers and three sentinels', () => {
    assert.deepEqual(Object.keys(ha.services).sort(), [
      'app',
      'm1',
      'm2',
      'm3',
      'mongo-init',
      'nginx',
      'redis-1',
      'redis-2',
      's1',
      's2',
      's3',
    ]);
  });

  test('the app finds the replica set by its seed list and Redis through the sentinels', () => {
    const env = environment(service('app', ha));
    assert.equal(
      byDefault(env.MONGODB_URL),
      'mongodb://m1:27017,m2:27017,m3:27017/tokenservice?replicaSet=rs0',
    );
    assert.equal(byDefault(env.REDIS_URL), 'redis+sentinel://s1:26379,s2:26379,s3:26379/tokenservice');
  });

  test('the app and nginx are those of docker-compose.yml but for their backends', () => {
    for (const name of ['app', 'nginx']) {
      const strip = (svc: Service) => {
        const { depends_on: _, environment: env, ...rest } = svc;
        const { MONGODB_URL: _m, REDIS_URL: _r, ...kept } = environment({ environment: env });
        return { ...rest, environment: kept };
      };
      assert.deepEqual(strip(service(name, ha)), strip(service(name)), name);
    }
    assert.deepEqual(service('nginx', ha).depends_on, service('nginx').depends_on);
  });

  test('the MongoDB members form rs0, which a one-shot job initiates before the app starts', () => {
    for (const name of members) {
      const member = service(name, ha);
      assert.match(member.image ?? '', /^mongo:\d/);
      assert.match(commandLine(member), /^mongod --replSet rs0 --bind_ip_all$/);
      assert.ok(
        mounts(member).some(({ source, target }) => source === `${name}-data` && target === '/data/db'),
      );
    }
    const init = service('mongo-init', ha);
    assert.equal(init.restart, 'no');
    for (const name of members) assert.equal(init.depends_on?.[name]?.condition, 'service_healthy');
    const script = mounts(init).find(({ source }) => source === './ops/mongo/init-replica-set.js');
    assert.ok(script && commandLine(init).endsWith(script.target));
    assert.match(commandLine(init), /mongodb:\/\/m1:27017\/\?directConnection=true/);
    assert.match(initScript, /\['m1:27017', 'm2:27017', 'm3:27017'\]/);
    assert.match(initScript, /rs\.initiate\(\{ _id: 'rs0', members \}\)/);
    assert.equal(service('app', ha).depends_on?.['mongo-init']?.condition, 'service_completed_successfully');
  });

  test('redis-2 replicates redis-1; three sentinels watch it under the master name of REDIS_URL, quorum 2', () => {
    assert.match(commandLine(service('redis-2', ha)), /--replicaof redis-1 6379\b/);
    assert.doesNotMatch(commandLine(service('redis-1', ha)), /--replicaof/);
    for (const name of ['redis-1', 'redis-2']) {
      assert.match(commandLine(service(name, ha)), new RegExp(`--replica-announce-ip ${name}\\b`));
      assert.match(commandLine(service(name, ha)), /--appendonly yes/);
    }
    const master = byDefault(environment(service('app', ha)).REDIS_URL)
      .split('/')
      .at(-1);
    assert.match(sentinelConf, new RegExp(`^sentinel monitor ${master} redis-1 6379 2$`, 'm'));
    assert.match(sentinelConf, /^sentinel resolve-hostnames yes$/m);
    assert.match(sentinelConf, /^sentinel announce-hostnames yes$/m);
    assert.match(sentinelConf, /^port 26379$/m);
    for (const name of sentinels) {
      const sentinel = service(name, ha);
      assert.match(
        commandLine(sentinel),
        new RegExp(`redis-sentinel /data/sentinel.conf --sentinel announce-ip ${name}$`),
      );
      const byTarget = new Map(mounts(sentinel).map(({ source, target }) => [target, source]));
      assert.equal(byTarget.get('/etc/redis/sentinel.conf'), './ops/redis/sentinel.conf');
      assert.equal(
        byTarget.get('/data'),
        `${name}-data`,
        'each sentinel keeps the configuration it rewrites',
      );
      assert.equal(service('app', ha).depends_on?.[name]?.condition, 'service_healthy');
    }
  });

  test('in both files every service another one waits on to be healthy has a healthcheck', () => {
    for (const file of [compose, ha]) {
      for (const [name, svc] of Object.entries(file.services)) {
        for (const [dependency, { condition }] of Object.entries(svc.depends_on ?? {})) {
          if (condition !== 'service_healthy') continue;
          assert.ok(
            file.services[dependency]?.healthcheck?.test?.length,
            `${name} waits on ${dependency}'s healthcheck`,
          );
        }
      }
    }
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
    assert.match(final, /npm ci[^\n]*--omit=dev/);
    assert.match(final, /^USER node\s*$/m);
    assert.match(final, /^ENTRYPOINT \["\/app\/ops\/docker-entrypoint\.sh"\]/m);
  });

  test('neither stage fetches the Node.js that package.json pins for machines without one', () => {
    const installs = installCommands();
    assert.equal(installs.length, 2);
    for (const install of installs) assert.match(install, /npm ci [^&]*--ignore-scripts/);
    assert.doesNotMatch(dockerfile, /npm install/, 'only npm ci, which installs the lock file exactly');
  });

  test('both stages install from the lock file as it is: npm ci accepts it', {
    skip: !onPath('npm') && 'npm is not on PATH',
  }, () => {
    for (const install of installCommands()) {
      const dir = mkdtempSync(join(tmpdir(), 'npm-ci-'));
      try {
        for (const file of ['package.json', 'package-lock.json'])
          copyFileSync(join(REPO_ROOT, file), join(dir, file));
        // The image's own commands, without downloading anything.
        const dryRun = install.replace(/npm ci /, 'npm ci --dry-run ').replace(/ && npm cache clean.*$/, '');
        const result = spawnSync('sh', ['-c', dryRun], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
        assert.equal(result.status, 0, `${dryRun}\n${result.stderr}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
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
