/**
 * The deployment files, checked without a Docker engine. The Compose files as compose-go (the
 * loader of `docker compose`) normalizes them with `.env.example` as the env file (that they load
 * at all, and that mistakes are refused, is test/deploy/compose-check.test.ts): the app is
 * reachable only through nginx, the images are the official ones, every container is limited,
 * the healthcheck asks the backends, the `.env` settings reach what they are documented to;
 * docker-compose.ha.yml runs the same app over a replica set and Sentinel. And the Dockerfile
 * builds an unprivileged Node.js 24 image from exactly the lock file, without development packages.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onPath } from '../support/backends.ts';
import {
  type ComposeProject,
  type ComposeService,
  checkCompose,
  composeCheckSkipped,
  loadCompose,
  OPERATOR_ENV,
} from '../support/compose.ts';
import { REPO_ROOT } from '../support/processes.ts';

const COMPOSE_FILES = ['docker-compose.yml', 'docker-compose.ha.yml'] as const;
/** test/deploy/operator-credentials.env, which the Compose files are loaded with. */
const CREDENTIALS = {
  redisPassword: 'test0redis0password',
  mongodbUser: 'tokenservice',
  mongodbPassword: 'test0mongodb0password',
  replicaSetKey: 'test0replica0set0key',
};
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');

/** The shell commands of the RUN instructions that install packages, continuation lines joined. */
function installCommands(): string[] {
  return [...dockerfile.replace(/\\\n\s*/g, ' ').matchAll(/^RUN (.*npm ci.*)$/gm)].map(
    (match) => match[1] ?? '',
  );
}
const template = readFileSync(join(REPO_ROOT, 'nginx/templates/default.conf.template'), 'utf8');

/** A path of the repository as compose-go resolves it: absolute. */
const inRepo = (path: string) => resolve(REPO_ROOT, path);

function service(name: string, file: ComposeProject): ComposeService {
  const found = file.services[name];
  assert.ok(found, `service ${name} is defined`);
  return found;
}

function commandLine(svc: ComposeService): string {
  return (svc.command ?? []).join(' ');
}

function environment(svc: ComposeService): Record<string, string | null> {
  return svc.environment ?? {};
}

/** Mount target → source (a volume's name, or the absolute host path of a bind mount). */
function mountsByTarget(svc: ComposeService): Map<string, string | undefined> {
  return new Map((svc.volumes ?? []).map(({ source, target }) => [target, source]));
}

// The files as compose-go normalizes them, loaded by the first suite that runs.
let compose!: ComposeProject;
let ha!: ComposeProject;
function loadBoth() {
  compose ??= loadCompose('docker-compose.yml');
  ha ??= loadCompose('docker-compose.ha.yml');
}
/** Every Redis data node of both files. */
const REDIS_SERVERS = () =>
  [
    [compose, 'redis'],
    [ha, 'redis-1'],
    [ha, 'redis-2'],
    [ha, 'redis-3'],
  ] as const;

describe('docker-compose.yml', { skip: composeCheckSkipped }, () => {
  before(loadBoth);

  test('defines app, mongo, redis and nginx', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['app', 'mongo', 'nginx', 'redis']);
  });

  test('in both files every host path a service mounts is in the repository and exists', () => {
    // compose-go checks named volumes and dependencies; a missing host path would be
    // created by Docker as an empty directory, even where a file was meant.
    for (const file of [compose, ha]) {
      for (const [name, svc] of Object.entries(file.services)) {
        for (const { type, source = '' } of svc.volumes ?? []) {
          if (type !== 'bind') continue;
          assert.ok(source.startsWith(inRepo('.')), `${name} mounts ${source}, inside the repository`);
          assert.ok(existsSync(source), `${name} mounts ${source}, which exists`);
        }
      }
    }
  });

  test('the app is built from the Dockerfile and reads .env.example, then an optional .env', () => {
    const app = service('app', compose);
    assert.deepEqual(app.build, { context: inRepo('.'), dockerfile: 'Dockerfile' });
    assert.deepEqual(app.env_file, [
      { path: inRepo('.env.example') },
      { path: inRepo('.env'), required: false },
    ]);
  });

  test('the app listens on every address of its container, as the image says: HOST 0.0.0.0', () => {
    for (const file of [compose, ha]) assert.equal(environment(service('app', file)).HOST, '0.0.0.0');
    assert.match(dockerfile, /\bHOST=0\.0\.0\.0\b/);
  });

  test('every app container mounts the shared keys and log volumes where the app looks for them', () => {
    const app = service('app', compose);
    const env = environment(app);
    const byTarget = mountsByTarget(app);
    assert.equal(byTarget.get(env.KEYS_DIR ?? ''), 'keys');
    assert.equal(byTarget.get(env.LOG_DIR ?? ''), 'log');
    assert.match(dockerfile, new RegExp(`KEYS_DIR=${env.KEYS_DIR}\\b`), 'the image agrees on KEYS_DIR');
    assert.match(dockerfile, new RegExp(`LOG_DIR=${env.LOG_DIR}\\b`), 'the image agrees on LOG_DIR');
  });

  test('the app uses the compose MongoDB and Redis and publishes no host port (so it scales)', () => {
    const app = service('app', compose);
    const env = environment(app);
    const { mongodbUser, mongodbPassword, redisPassword } = CREDENTIALS;
    assert.equal(
      env.MONGODB_URL,
      `mongodb://${mongodbUser}:${mongodbPassword}@mongo:27017/tokenservice?authSource=admin`,
    );
    assert.equal(env.REDIS_URL, `redis://:${redisPassword}@redis:6379`);
    assert.equal(app.ports, undefined);
    assert.equal(
      app.profiles,
      undefined,
      'the app runs by default; the CLI is `docker compose run --rm app ...`',
    );
  });

  test('mongo and redis are the official images with persistent data; redis keeps an append-only file', () => {
    const mongo = service('mongo', compose);
    const redis = service('redis', compose);
    assert.match(mongo.image ?? '', /^mongo:\d/);
    assert.match(redis.image ?? '', /^redis:\d/);
    assert.equal(mountsByTarget(mongo).get('/data/db'), 'mongo-data');
    assert.equal(mountsByTarget(redis).get('/data'), 'redis-data');
    assert.match(commandLine(redis), /--appendonly yes/);
  });

  test("Redis never evicts a refresh token: noeviction, and maxmemory half the container's memory", () => {
    for (const [file, name] of REDIS_SERVERS()) {
      const svc = service(name, file);
      const command = commandLine(svc);
      assert.match(command, /--maxmemory "\$\(\(REDIS_MEMORY_MB \/ 2\)\)mb"/, name);
      assert.match(command, /--maxmemory-policy noeviction\b/, name);
      assert.equal(environment(svc).REDIS_MEMORY_MB, '512', name);
      assert.equal(svc.deploy?.resources?.limits?.memory, String(512 * 1024 ** 2), name);
    }
  });

  test("Redis and MongoDB require the credentials of .env, and the app's URLs carry them", () => {
    for (const [file, name] of REDIS_SERVERS()) {
      const svc = service(name, file);
      assert.equal(environment(svc).REDIS_PASSWORD, CREDENTIALS.redisPassword, name);
      assert.match(commandLine(svc), /--requirepass "\$REDIS_PASSWORD"/, name);
      assert.match(
        (svc.healthcheck?.test ?? []).join(' '),
        /REDISCLI_AUTH="\$REDIS_PASSWORD" redis-cli ping/,
        `${name}'s healthcheck authenticates`,
      );
    }
    for (const [file, name] of [
      [compose, 'mongo'],
      ...['m1', 'm2', 'm3'].map((m) => [ha, m] as const),
    ] as const) {
      const env = environment(service(name, file));
      assert.equal(env.MONGO_INITDB_ROOT_USERNAME, CREDENTIALS.mongodbUser, name);
      assert.equal(env.MONGO_INITDB_ROOT_PASSWORD, CREDENTIALS.mongodbPassword, name);
    }
  });

  test('every container has CPU and memory limits; the app runs one worker per CPU of its limit', () => {
    for (const file of [compose, ha]) {
      for (const [name, svc] of Object.entries(file.services)) {
        if (svc.restart === 'no') continue; // a one-shot job
        const limits = svc.deploy?.resources?.limits;
        assert.ok((limits?.cpus ?? 0) > 0, `${name} has a CPU limit`);
        assert.ok(Number(limits?.memory) > 0, `${name} has a memory limit`);
      }
      const app = service('app', file);
      assert.equal(environment(app).WORKERS, '2');
      assert.equal(app.deploy?.resources?.limits?.cpus, 2, 'WORKERS is the CPU limit');
    }
  });

  test('the app is healthy only while its backends answer: the healthcheck runs backends:check', () => {
    for (const file of [compose, ha]) {
      const test = service('app', file).healthcheck?.test ?? [];
      assert.deepEqual(test.slice(0, 3), ['CMD', '/app/ops/docker-entrypoint.sh', 'backends:check']);
    }
    const nginx = service('nginx', compose).depends_on ?? {};
    assert.equal(nginx.app?.condition, 'service_healthy');
  });

  test('nginx and the app read one BODY_LIMIT and AVATAR_SIZE_LIMIT, and nginx runs the script that converts them', () => {
    for (const file of [compose, ha]) {
      for (const limit of ['BODY_LIMIT', 'AVATAR_SIZE_LIMIT']) {
        const app = environment(service('app', file))[limit];
        assert.equal(app, '1mb', limit);
        assert.equal(environment(service('nginx', file))[limit], app, limit);
      }
      const nginx = service('nginx', file).volumes ?? [];
      const script = nginx.find(({ target }) => target === '/docker-entrypoint.d/10-body-limit.envsh');
      assert.equal(script?.source, inRepo('nginx/entrypoint/10-body-limit.envsh'));
      assert.equal(script?.read_only, true);
    }
    const script = statSync(inRepo('nginx/entrypoint/10-body-limit.envsh'));
    assert.ok(script.mode & 0o111, 'the image sources only executable .envsh files');
  });

  test('nginx is the official image, publishes 80 and 443, and gets the template and certificates', () => {
    const nginx = service('nginx', compose);
    assert.match(nginx.image ?? '', /^nginx(:|$)/);
    const published = (nginx.ports ?? []).map(({ published, target }) => `${published}:${target}`);
    assert.deepEqual(published.sort(), ['443:443', '80:80']);
    const byTarget = mountsByTarget(nginx);
    assert.equal(byTarget.get('/etc/nginx/templates'), inRepo('nginx/templates'));
    assert.equal(byTarget.get('/etc/nginx/certs'), inRepo('nginx/certs'));
  });

  test('nginx gives every placeholder of the template a value, and proxies to the app service', () => {
    // The entrypoint script exports this one (test/deploy/nginx.test.ts checks its value).
    const env: Record<string, string | null> = {
      ...environment(service('nginx', compose)),
      NGINX_CLIENT_MAX_BODY_SIZE: '1m',
      NGINX_AVATAR_MAX_BODY_SIZE: '1064960',
    };
    const placeholders = new Set(
      [...template.matchAll(/\$\{(NGINX_[A-Z0-9_]+)\}/g)].map((match) => match[1]),
    );
    assert.ok(placeholders.size > 0);
    const filter = new RegExp(env.NGINX_ENVSUBST_FILTER ?? '.');
    for (const name of placeholders) {
      assert.ok(name && typeof env[name] === 'string', `nginx sets ${name}`);
      assert.match(name ?? '', filter, `${name} passes NGINX_ENVSUBST_FILTER`);
    }
    assert.equal(env.NGINX_SERVER_NAME, 'localhost');
    assert.equal(env.NGINX_UPSTREAM, 'app:8080 resolve');
    assert.equal(env.NGINX_RESOLVER, '127.0.0.11', "Docker's DNS, so scaled app containers are found");
    assert.equal(env.NGINX_HTTP_PORT, '80');
    assert.equal(env.NGINX_HTTPS_PORT, '443');
    assert.match(env.NGINX_TLS_CERTIFICATE ?? '', /^\/etc\/nginx\/certs\//);
    // Nothing else in the template looks like a placeholder that envsubst would blank.
    assert.doesNotMatch(template.replace(/\$\{NGINX_[A-Z0-9_]+\}/g, ''), /\$\{/);
  });
});

describe('the settings docker compose reads from .env reach what they are documented to', {
  skip: composeCheckSkipped,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'compose-env-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const file of COMPOSE_FILES) {
    test(`${file}: APP_CPUS, APP_MEMORY, BODY_LIMIT, AVATAR_SIZE_LIMIT, REDIS_MEMORY_MB, NGINX_SERVER_NAME, HTTP_PORT and HTTPS_PORT`, () => {
      // As an operator's .env: .env.example with their own values after it.
      const operatorEnv = join(dir, 'operator.env');
      writeFileSync(
        operatorEnv,
        'APP_CPUS=3\nAPP_MEMORY=2g\nBODY_LIMIT=5mb\nAVATAR_SIZE_LIMIT=2mb\nREDIS_MEMORY_MB=600\n' +
          'NGINX_SERVER_NAME=auth.example.com\nHTTP_PORT=8080\nHTTPS_PORT=8443\n',
      );
      const project = loadCompose(file, [...OPERATOR_ENV, operatorEnv]);
      const app = service('app', project);
      assert.equal(app.deploy?.resources?.limits?.cpus, 3);
      assert.equal(environment(app).WORKERS, '3', 'one worker per CPU of the limit');
      assert.equal(app.deploy?.resources?.limits?.memory, String(2 * 1024 ** 3));
      assert.equal(environment(app).BODY_LIMIT, '5mb');
      const nginx = environment(service('nginx', project));
      assert.equal(nginx.BODY_LIMIT, '5mb');
      assert.equal(environment(app).AVATAR_SIZE_LIMIT, '2mb');
      assert.equal(nginx.AVATAR_SIZE_LIMIT, '2mb');
      assert.equal(nginx.NGINX_SERVER_NAME, 'auth.example.com');
      const published = (service('nginx', project).ports ?? []).map(
        ({ published, target }) => `${published}:${target}`,
      );
      assert.deepEqual(published.sort(), ['8080:80', '8443:443']);
      const redisServers = Object.entries(project.services).filter(([, svc]) =>
        commandLine(svc).includes('exec redis-server '),
      );
      assert.ok(redisServers.length > 0);
      for (const [name, svc] of redisServers) {
        assert.equal(environment(svc).REDIS_MEMORY_MB, '600', name);
        assert.equal(svc.deploy?.resources?.limits?.memory, String(600 * 1024 ** 2), name);
      }
    });
  }
});

describe('docker-compose.ha.yml', { skip: composeCheckSkipped }, () => {
  before(loadBoth);

  const sentinelConf = readFileSync(join(REPO_ROOT, 'ops/redis/sentinel.conf'), 'utf8');
  const initScript = readFileSync(join(REPO_ROOT, 'ops/mongo/init-replica-set.js'), 'utf8');
  const members = ['m1', 'm2', 'm3'];
  const sentinels = ['s1', 's2', 's3'];

  test('defines the app and nginx, three MongoDB members with their init job, three Redis servers and three sentinels', () => {
    assert.deepEqual(Object.keys(ha.services).sort(), [
      'app',
      'm1',
      'm2',
      'm3',
      'mongo-init',
      'nginx',
      'redis-1',
      'redis-2',
      'redis-3',
      's1',
      's2',
      's3',
    ]);
  });

  test('the app finds the replica set by its seed list and Redis through the sentinels', () => {
    const env = environment(service('app', ha));
    const { mongodbUser, mongodbPassword, redisPassword } = CREDENTIALS;
    assert.equal(
      env.MONGODB_URL,
      `mongodb://${mongodbUser}:${mongodbPassword}@m1:27017,m2:27017,m3:27017/tokenservice?replicaSet=rs0&authSource=admin`,
    );
    assert.equal(env.REDIS_URL, `redis+sentinel://:${redisPassword}@s1:26379,s2:26379,s3:26379/tokenservice`);
  });

  test('the app and nginx are those of docker-compose.yml but for their backends', () => {
    for (const name of ['app', 'nginx']) {
      const strip = (svc: ComposeService) => {
        const { depends_on: _, environment: env, ...rest } = svc;
        const { MONGODB_URL: _m, REDIS_URL: _r, ...kept } = env ?? {};
        return { ...rest, environment: kept };
      };
      assert.deepEqual(strip(service(name, ha)), strip(service(name, compose)), name);
    }
    assert.deepEqual(service('nginx', ha).depends_on, service('nginx', compose).depends_on);
  });

  test('the MongoDB members form rs0, which a one-shot job initiates before the app starts', () => {
    for (const name of members) {
      const member = service(name, ha);
      assert.match(member.image ?? '', /^mongo:\d/);
      assert.match(
        commandLine(member),
        /&& exec docker-entrypoint\.sh mongod --replSet rs0 --keyFile \/tmp\/replica-set\.key --bind_ip_all$/,
      );
      assert.match(commandLine(member), /printf %s "\$MONGODB_REPLICA_SET_KEY" > \/tmp\/replica-set\.key/);
      assert.equal(environment(member).MONGODB_REPLICA_SET_KEY, CREDENTIALS.replicaSetKey);
      assert.equal(mountsByTarget(member).get('/data/db'), `${name}-data`);
    }
    const init = service('mongo-init', ha);
    assert.equal(init.restart, 'no');
    for (const name of members) assert.equal(init.depends_on?.[name]?.condition, 'service_healthy');
    const script = init.volumes?.find(({ source }) => source === inRepo('ops/mongo/init-replica-set.js'));
    assert.ok(script && commandLine(init).endsWith(script.target));
    assert.match(commandLine(init), /mongodb:\/\/m1:27017\/\?directConnection=true/);
    assert.match(
      commandLine(init),
      /--username "\$MONGODB_USERNAME" --password "\$MONGODB_PASSWORD" --authenticationDatabase admin/,
    );
    assert.match(initScript, /\['m1:27017', 'm2:27017', 'm3:27017'\]/);
    assert.match(initScript, /rs\.initiate\(\{ _id: 'rs0', members \}\)/);
    assert.equal(service('app', ha).depends_on?.['mongo-init']?.condition, 'service_completed_successfully');
  });

  test('redis-2 and redis-3 replicate redis-1; three sentinels wait for all three and watch them under the master name of REDIS_URL, quorum 2', () => {
    for (const name of ['redis-2', 'redis-3'])
      assert.match(commandLine(service(name, ha)), /--replicaof redis-1 6379'?$/, name);
    assert.doesNotMatch(commandLine(service('redis-1', ha)), /--replicaof/);
    for (const name of ['redis-1', 'redis-2', 'redis-3']) {
      assert.match(commandLine(service(name, ha)), new RegExp(`--replica-announce-ip ${name}\\b`));
      assert.match(commandLine(service(name, ha)), /--appendonly yes/);
      // Any of them may be a replica after a failover.
      assert.match(commandLine(service(name, ha)), /--masterauth "\$REDIS_PASSWORD"/, name);
    }
    const master = (environment(service('app', ha)).REDIS_URL ?? '').split('/').at(-1);
    assert.match(sentinelConf, new RegExp(`^sentinel monitor ${master} redis-1 6379 2$`, 'm'));
    assert.match(sentinelConf, /^sentinel resolve-hostnames yes$/m);
    assert.match(sentinelConf, /^sentinel announce-hostnames yes$/m);
    assert.match(sentinelConf, /^port 26379$/m);
    for (const name of sentinels) {
      const sentinel = service(name, ha);
      assert.match(
        commandLine(sentinel),
        new RegExp(
          `redis-sentinel /data/sentinel.conf --sentinel announce-ip ${name} ` +
            `--sentinel auth-pass ${master} "\\$REDIS_PASSWORD" --requirepass "\\$REDIS_PASSWORD"$`,
        ),
      );
      assert.equal(environment(sentinel).REDIS_PASSWORD, CREDENTIALS.redisPassword);
      for (const node of ['redis-1', 'redis-2', 'redis-3'])
        assert.equal(sentinel.depends_on?.[node]?.condition, 'service_healthy', `${name} waits for ${node}`);
      const byTarget = mountsByTarget(sentinel);
      assert.equal(byTarget.get('/etc/redis/sentinel.conf'), inRepo('ops/redis/sentinel.conf'));
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

describe('the Compose files have no working default credentials', { skip: composeCheckSkipped }, () => {
  for (const [file, required] of [
    ['docker-compose.yml', ['REDIS_PASSWORD', 'MONGODB_USERNAME', 'MONGODB_PASSWORD']],
    [
      'docker-compose.ha.yml',
      ['REDIS_PASSWORD', 'MONGODB_USERNAME', 'MONGODB_PASSWORD', 'MONGODB_REPLICA_SET_KEY'],
    ],
  ] as const) {
    test(`${file} refuses to start with .env.example alone, naming each credential it lacks`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'compose-credentials-'));
      try {
        const credentials = readFileSync(inRepo(OPERATOR_ENV[1]), 'utf8');
        for (const name of required) {
          const without = join(dir, `without-${name}.env`);
          writeFileSync(without, credentials.replace(new RegExp(`^${name}=.*$`, 'm'), ''));
          const { status, stderr } = checkCompose(file, ['.env.example', without]);
          assert.equal(status, 1, `${name} left out`);
          assert.match(
            stderr,
            new RegExp(`required variable ${name} is missing a value: set ${name} in \\.env`),
          );
        }
        const { status } = checkCompose(file, ['.env.example']);
        assert.equal(status, 1, '.env.example sets no credential');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
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
