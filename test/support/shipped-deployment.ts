/**
 * docker-compose.ha.yml run as processes on one machine, for the rehearsal of the shipped
 * deployment: each service's command, environment and ports as compose-go loads them (with
 * `.env.example` and an operator's `.env`), moved from the compose network to free loopback
 * ports (every process binds 127.0.0.1 only). What cannot run as shipped outside Docker is
 * replaced, each at one place below: the app image by the project's entry point on the same
 * environment, the MongoDB replica set by one FerretDB, and `resolve` on nginx's upstream
 * (nginx 1.27.3 or newer; Debian's is older) by one `server` line per app instance, which is
 * what `resolve` keeps up to date in compose.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Redis } from 'ioredis';
import { type Backend, freePort, startFerretDb, startRedisOn } from './backends.ts';
import { type ComposeProject, type ComposeService, loadCompose } from './compose.ts';
import {
  type NginxProcess,
  REPO_ROOT,
  renderTemplate,
  type ServiceProcess,
  spawnService,
  startNginx,
  waitForHttp,
} from './processes.ts';
import { startSmtpServer, type TestSmtpServer } from './smtp.ts';

export const HA_COMPOSE_FILE = 'docker-compose.ha.yml';

/** A Redis data node of the compose file, by its service name. */
export interface DataNode {
  name: string;
  port: number;
  server: Backend;
  /** What it logged so far. */
  log(): string;
}

export interface ShippedDeployment {
  /** nginx's HTTPS address, and the certificate it presents. */
  https: string;
  ca: string;
  /** The Redis data nodes, in the compose file's order. */
  dataNodes: DataNode[];
  /** The data node the sentinels name as the primary (asked of the first one that answers). */
  primary(): Promise<DataNode>;
  /** The replicas the primary has online, by name. */
  onlineReplicas(): Promise<string[]>;
  /** Whether every sentinel names `node` as the primary and sees every other data node as a replica. */
  settled(node: DataNode): Promise<boolean>;
  mail: TestSmtpServer;
  apps: ServiceProcess[];
  stop(): Promise<void>;
}

/** What a process needs that the compose network gave it: a loopback port for each service's port. */
class Loopback {
  readonly #ports = new Map<string, number>();

  async reserve(service: string, containerPort: number): Promise<number> {
    const port = await freePort();
    this.#ports.set(`${service}:${containerPort}`, port);
    return port;
  }

  port(service: string, containerPort: number): number {
    const port = this.#ports.get(`${service}:${containerPort}`);
    if (port === undefined) throw new Error(`${service}:${containerPort} is not a service of the rehearsal`);
    return port;
  }

  /** `host:port,host:port` of the compose network as loopback addresses. */
  hosts(list: string): string {
    return list
      .split(',')
      .map((entry) => {
        const [host = '', port = ''] = entry.split(':');
        return `127.0.0.1:${this.port(host, Number(port))}`;
      })
      .join(',');
  }
}

function services(project: ComposeProject, match: (service: ComposeService) => boolean): string[] {
  return Object.entries(project.services)
    .filter(([, service]) => match(service))
    .map(([name]) => name);
}

function serviceOf(project: ComposeProject, name: string): ComposeService {
  const service = project.services[name];
  if (!service) throw new Error(`${HA_COMPOSE_FILE} has no service ${name}`);
  return service;
}

/** The host path a service mounts at `target`. */
function mountSource(service: ComposeService, target: string): string {
  const mount = service.volumes?.find((volume) => volume.target === target);
  if (!mount?.source) throw new Error(`nothing is mounted at ${target}`);
  return mount.source;
}

const REDIS_PORT = 6379;
const SENTINEL_PORT = 26379;

/** The programs a command runs in the container stand-ins replace: they print what they were given. */
const STUBBED = ['redis-server', 'redis-sentinel', 'cp'];

/**
 * The programs a Redis service's command runs, each with its arguments, as its shell expands
 * them in the container (its variables are the service's environment): the command runs with
 * stand-ins for those programs first on PATH, which print their arguments and do nothing else.
 */
function programsOf(service: ComposeService, stubs: string): string[][] {
  const command = service.command ?? [];
  if (command[0] !== 'sh' || command[1] !== '-c') return [command];
  const run = spawnSync('sh', ['-c', command[2] ?? ''], {
    encoding: 'utf8',
    env: { ...definedEnvironment(service), PATH: `${stubs}:${process.env.PATH ?? ''}` },
  });
  if (run.status !== 0) throw new Error(`the command failed: ${command.join(' ')}\n${run.stderr}`);
  return run.stdout
    .split('\0\n')
    .filter(Boolean)
    .map((call) => call.split('\0'));
}

function writeStubs(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const name of STUBBED) {
    writeFileSync(join(dir, name), `#!/bin/sh\nprintf '%s\\0' "$(basename "$0")" "$@"\nprintf '\\n'\n`, {
      mode: 0o755,
    });
  }
}

/** A data node's `redis-server` arguments, with the other nodes' names as loopback addresses. */
function dataNodeArgs(argv: readonly string[], loopback: Loopback): string[] {
  const args: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--replicaof') {
      const [host = '', port = ''] = argv.slice(i + 1, i + 3);
      args.push(arg, '127.0.0.1', String(loopback.port(host, Number(port))));
      i += 2;
    } else if (arg === '--replica-announce-ip') {
      args.push(arg, '127.0.0.1');
      i += 1;
    } else args.push(arg);
  }
  return args;
}

/**
 * A sentinel's configuration and arguments from what its command runs: a copy of the mounted
 * file (made once, into its volume), then `redis-sentinel` on the copy with more arguments.
 */
function sentinelSetup(
  service: ComposeService,
  programs: string[][],
  port: number,
  loopback: Loopback,
): { conf: (dir: string) => string; args: string[] } {
  const copied = programs.find(([program]) => program === 'cp')?.[1];
  const sentinel = programs.find(([program]) => program === 'redis-sentinel');
  if (!copied || !sentinel) throw new Error(`not a sentinel's command: ${JSON.stringify(programs)}`);
  const shipped = readFileSync(mountSource(service, copied), 'utf8');
  const args = ['--sentinel', ...sentinel.slice(2)];
  for (let i = 0; i < args.length - 1; i++) if (args[i] === 'announce-ip') args[i + 1] = '127.0.0.1';
  const conf = (dir: string) =>
    [
      ...shipped.split('\n').map((line) => {
        const monitor = /^sentinel monitor (\S+) (\S+) (\d+) (\d+)$/.exec(line);
        if (monitor)
          return `sentinel monitor ${monitor[1]} 127.0.0.1 ${loopback.port(monitor[2] ?? '', Number(monitor[3]))} ${monitor[4]}`;
        return /^port \d+$/.test(line) ? `port ${port}` : line;
      }),
      'bind 127.0.0.1',
      `dir ${dir}`,
      '',
    ].join('\n');
  return { conf, args };
}

/**
 * The app's MongoDB URL with FerretDB for the replica set: its credentials, database and
 * options kept, without `replicaSet`.
 */
function onFerretDb(composeUrl: string, ferretPort: number): string {
  const match = /^mongodb:\/\/(?:([^@/]*)@)?[^/?]*(\/[^?]*)?(?:\?(.*))?$/.exec(composeUrl);
  if (!match) throw new Error(`not a MongoDB URL: ${composeUrl}`);
  const options = new URLSearchParams(match[3] ?? '');
  options.delete('replicaSet');
  const query = options.size > 0 ? `?${options}` : '';
  return `mongodb://${match[1] ? `${match[1]}@` : ''}127.0.0.1:${ferretPort}${match[2] ?? ''}${query}`;
}

/** The app's REDIS_URL with the sentinels' names as loopback addresses. */
function onLoopbackSentinels(composeUrl: string, loopback: Loopback): string {
  const match = /^(redis\+sentinel:\/\/(?:[^@/]*@)?)([^/]*)(\/.*)$/.exec(composeUrl);
  if (!match) throw new Error(`the HA app's REDIS_URL is not a Sentinel URL: ${composeUrl}`);
  return `${match[1]}${loopback.hosts(match[2] ?? '')}${match[3]}`;
}

/** What the nginx image's entrypoint exports after sourcing the `*.envsh` scripts compose mounts. */
function entrypointExports(
  service: ComposeService,
  environment: Record<string, string>,
): Record<string, string> {
  const scripts = (service.volumes ?? [])
    .filter(({ target }) => target.startsWith('/docker-entrypoint.d/') && target.endsWith('.envsh'))
    .map(({ source = '' }) => source);
  const run = spawnSync('sh', ['-c', `${scripts.map((script) => `. "${script}" && `).join('')}env`], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...environment },
  });
  if (run.status !== 0) throw new Error(`nginx's entrypoint scripts refused to start:\n${run.stderr}`);
  return Object.fromEntries(
    run.stdout
      .split('\n')
      .map((line) => line.split('='))
      .filter(([name]) => name?.startsWith('NGINX_'))
      .map(([name = '', ...value]) => [name, value.join('=')]),
  );
}

/** Compose's `environment` without the entries it leaves to the host (null). */
function definedEnvironment(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).filter((entry): entry is [string, string] => entry[1] !== null),
  );
}

/** A marker for the app's address in the rendered template: one `server` line per instance replaces its line. */
const APP_MARKER = '__rehearsal_app_instance__';

export async function startShippedDeployment(options: {
  root: string;
  /** The nginx binary (Debian's). */
  nginx: string;
  /** Seconds to wait for each step to be ready. */
  readyTimeoutMs?: number;
}): Promise<ShippedDeployment> {
  const { root } = options;
  const started: { stop(): Promise<void> }[] = [];
  const stop = async () => {
    for (const part of started.reverse()) await part.stop().catch(() => {});
  };
  try {
    const mail = await startSmtpServer();
    started.push({ stop: () => mail.close() });
    // What an operator adds to .env before the first start (.env.example says so): the
    // credentials the Compose files require, and an SMTP server.
    const secret = () => randomBytes(16).toString('hex');
    const operatorEnv = {
      REDIS_PASSWORD: secret(),
      MONGODB_USERNAME: 'tokenservice',
      MONGODB_PASSWORD: secret(),
      MONGODB_REPLICA_SET_KEY: secret(),
      SMTP_URL: mail.url,
    };
    const dotEnv = join(root, '.env');
    writeFileSync(
      dotEnv,
      Object.entries(operatorEnv)
        .map(([name, value]) => `${name}=${value}\n`)
        .join(''),
    );
    const project = loadCompose(HA_COMPOSE_FILE, ['.env.example', dotEnv]);
    const loopback = new Loopback();

    // Redis: the data nodes (the primary first: the replicas name it), then the sentinels.
    const stubs = join(root, 'stubs');
    writeStubs(stubs);
    const programs = new Map(
      services(project, (service) => /redis-(server|sentinel)/.test((service.command ?? []).join(' '))).map(
        (name) => [name, programsOf(serviceOf(project, name), stubs)] as const,
      ),
    );
    const runs = (name: string, program: string) => programs.get(name)?.some(([run]) => run === program);
    const nodeNames = [...programs.keys()].filter((name) => runs(name, 'redis-server'));
    const sentinelNames = [...programs.keys()].filter((name) => runs(name, 'redis-sentinel'));
    const argvOf = (name: string) => programs.get(name)?.find(([run]) => run === 'redis-server') ?? [];
    for (const name of nodeNames) await loopback.reserve(name, REDIS_PORT);
    const sentinelPorts = new Map<string, number>();
    for (const name of sentinelNames) sentinelPorts.set(name, await loopback.reserve(name, SENTINEL_PORT));
    const dataNodes: DataNode[] = [];
    const byReplication = [...nodeNames].sort(
      (a, b) => Number(argvOf(a).includes('--replicaof')) - Number(argvOf(b).includes('--replicaof')),
    );
    for (const name of byReplication) {
      const port = loopback.port(name, REDIS_PORT);
      const args = dataNodeArgs(argvOf(name), loopback);
      let logFile = '';
      const server = await startRedisOn(port, (dir) => {
        logFile = join(dir, 'redis.log');
        return [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          ...args,
          // After the compose command: its log, which the container writes to stdout, kept for a failure's story.
          '--logfile',
          logFile,
        ];
      });
      started.push({ stop: () => server.dispose() });
      dataNodes.push({ name, port, server, log: () => readFileSync(logFile, 'utf8') });
    }
    dataNodes.sort((a, b) => nodeNames.indexOf(a.name) - nodeNames.indexOf(b.name));
    for (const name of sentinelNames) {
      const port = sentinelPorts.get(name) ?? 0;
      const setup = sentinelSetup(serviceOf(project, name), programs.get(name) ?? [], port, loopback);
      const server = await startRedisOn(port, (dir) => {
        const conf = join(dir, 'sentinel.conf');
        writeFileSync(conf, setup.conf(dir));
        return [conf, ...setup.args];
      });
      started.push({ stop: () => server.dispose() });
    }
    // The app's Redis URL names the master and carries the password of the sentinels and the nodes.
    const composeEnv = definedEnvironment(serviceOf(project, 'app'));
    const redisUrl = /^redis\+sentinel:\/\/(?::([^@/]*)@)?[^/]*\/([^/?]+)/.exec(composeEnv.REDIS_URL ?? '');
    if (!redisUrl?.[2])
      throw new Error(`the HA app's REDIS_URL is not a Sentinel URL: ${composeEnv.REDIS_URL}`);
    const [, password, masterName] = redisUrl;
    const redis = (port: number) =>
      new Redis(port, '127.0.0.1', {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        ...(password ? { password: decodeURIComponent(password) } : {}),
      });
    const byPort = (port: number) => dataNodes.find((node) => node.port === port);
    const ask = async <T>(port: number, ...command: string[]): Promise<T> => {
      const client = redis(port);
      try {
        return (await client.call('SENTINEL', ...command)) as T;
      } finally {
        client.disconnect();
      }
    };
    const primary = async (): Promise<DataNode> => {
      for (const port of sentinelPorts.values()) {
        try {
          const [, masterPort] = await ask<string[]>(port, 'GET-MASTER-ADDR-BY-NAME', masterName);
          const node = byPort(Number(masterPort));
          if (node) return node;
        } catch {
          // that sentinel does not answer; ask the next
        }
      }
      throw new Error('no sentinel names a primary');
    };
    const settled = async (node: DataNode): Promise<boolean> => {
      for (const port of sentinelPorts.values()) {
        const [, masterPort] = await ask<string[]>(port, 'GET-MASTER-ADDR-BY-NAME', masterName);
        if (Number(masterPort) !== node.port) return false;
        const replicas = await ask<string[][]>(port, 'REPLICAS', masterName);
        const healthy = replicas.filter((fields) => fields[fields.indexOf('flags') + 1] === 'slave').length;
        if (healthy !== dataNodes.length - 1) return false;
        const others = await ask<unknown[]>(port, 'SENTINELS', masterName);
        if (others.length !== sentinelPorts.size - 1) return false;
      }
      return true;
    };
    const onlineReplicas = async (): Promise<string[]> => {
      const master = await primary();
      const client = redis(master.port);
      try {
        const info = await client.info('replication');
        return [...info.matchAll(/^slave\d+:ip=[^,]*,port=(\d+),state=online/gm)].map(
          (match) => byPort(Number(match[1]))?.name ?? `port ${match[1]}`,
        );
      } finally {
        client.disconnect();
      }
    };
    const first = dataNodes.find((node) => !argvOf(node.name).includes('--replicaof'));
    if (!first) throw new Error(`${HA_COMPOSE_FILE} has no Redis primary`);
    await until(() => settled(first), 'the sentinels see every data node and each other', 60_000);

    // MongoDB: FerretDB in place of the replica set, with the root user the image creates.
    const member = Object.values(project.services).find(
      (service) => service.environment?.MONGO_INITDB_ROOT_USERNAME,
    )?.environment;
    const ferret = await startFerretDb(
      member
        ? [
            '--test-enable-new-auth',
            '--setup-database=admin',
            `--setup-username=${member.MONGO_INITDB_ROOT_USERNAME}`,
            `--setup-password=${member.MONGO_INITDB_ROOT_PASSWORD}`,
          ]
        : [],
    );
    started.push({ stop: () => ferret.dispose() });

    // The app: two instances (`--scale app=2`) of the image's command on its environment,
    // started at once on the shared keys and log directories (the volumes).
    const appPort = Number(composeEnv.PORT);
    const apps: ServiceProcess[] = [];
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const env = {
        ...composeEnv,
        // The operator's .env, which the app reads after .env.example.
        ...operatorEnv,
        HOST: '127.0.0.1',
        PORT: String(port),
        KEYS_DIR: join(root, 'keys'),
        LOG_DIR: join(root, 'log'),
        MONGODB_URL: onFerretDb(composeEnv.MONGODB_URL ?? '', Number(new URL(ferret.url).port)),
        REDIS_URL: onLoopbackSentinels(composeEnv.REDIS_URL ?? '', loopback),
      };
      const service = spawnService({ cwd: root, env });
      started.push({ stop: () => service.stop() });
      apps.push(service);
    }
    const workers = Number(composeEnv.WORKERS);
    await Promise.all(
      apps.map(async (service) => {
        await waitForHttp(service.url, { service, timeoutMs: options.readyTimeoutMs ?? 60_000 });
        await service.waitForRecord(
          (record) => String(record.msg).startsWith(`All ${workers} worker(s) serving`),
          options.readyTimeoutMs ?? 60_000,
        );
      }),
    );

    // nginx: the image's entrypoint (its scripts, then the templates), on loopback ports.
    const front = serviceOf(project, 'nginx');
    const certs = join(root, 'certs');
    execFileSync('sh', [join(REPO_ROOT, 'ops/make-cert.sh'), certs, 'localhost'], { stdio: 'ignore' });
    const ca = readFileSync(join(certs, 'tls.crt'), 'utf8');
    const nginxEnv = definedEnvironment(front);
    const listen = new Map<number, number>();
    for (const { target } of front.ports ?? []) listen.set(target, await freePort());
    const upstream = /^app:(\d+)( resolve)?$/.exec(nginxEnv.NGINX_UPSTREAM ?? '');
    if (Number(upstream?.[1]) !== appPort)
      throw new Error(`nginx's upstream is not the app's port: ${nginxEnv.NGINX_UPSTREAM}`);
    const values: Record<string, string> = {
      ...nginxEnv,
      ...entrypointExports(front, nginxEnv),
      NGINX_UPSTREAM: APP_MARKER,
    };
    for (const name of ['NGINX_HTTP_PORT', 'NGINX_HTTPS_PORT']) {
      const port = listen.get(Number(values[name]));
      if (port === undefined) throw new Error(`nginx publishes no port ${values[name]} (${name})`);
      values[name] = `127.0.0.1:${port}`;
    }
    const prefix = join(root, 'nginx');
    const confD = join(prefix, 'conf.d');
    mkdirSync(confD, { recursive: true });
    // nginx's workers run as another user when the tests run as root.
    chmodSync(root, 0o755);
    const templates = mountSource(front, '/etc/nginx/templates');
    const mounts = (front.volumes ?? []).map(({ source = '', target }) =>
      target === '/etc/nginx/certs' ? { source: certs, target } : { source, target },
    );
    for (const file of readdirSync(templates).filter((name) => name.endsWith('.template'))) {
      let site = renderTemplate(readFileSync(join(templates, file), 'utf8'), values);
      for (const { source, target } of mounts) site = site.replaceAll(target, source);
      site = site
        .split('\n')
        .flatMap((line) =>
          line.includes(APP_MARKER)
            ? apps.map((service) => line.replace(APP_MARKER, new URL(service.url).host))
            : [line],
        )
        .join('\n');
      writeFileSync(join(confD, basename(file, '.template')), site);
    }
    // The official image's nginx.conf around conf.d/, with its paths under the prefix.
    writeFileSync(
      join(prefix, 'nginx.conf'),
      [
        'worker_processes auto;',
        `pid ${prefix}/nginx.pid;`,
        `error_log ${prefix}/error.log notice;`,
        'events { worker_connections 1024; }',
        'http {',
        '  include /etc/nginx/mime.types;',
        '  default_type application/octet-stream;',
        '  sendfile on;',
        '  keepalive_timeout 65;',
        `  client_body_temp_path ${prefix}/client_body;`,
        `  proxy_temp_path ${prefix}/proxy;`,
        `  include ${confD}/*.conf;`,
        '}',
        '',
      ].join('\n'),
    );
    const https = `https://127.0.0.1:${listen.get(443)}`;
    const nginx: NginxProcess = await startNginx({
      binary: options.nginx,
      prefix,
      config: join(prefix, 'nginx.conf'),
      readyUrl: `${https}/`,
      ca,
    });
    started.push({ stop: () => nginx.stop() });

    return { https, ca, dataNodes, primary, onlineReplicas, settled, mail, apps, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Polls `check` (a throw counts as not yet) until it holds; throws naming `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
