/**
 * Real backend servers that a test starts for itself on a free loopback port, so it can stop
 * and restart them without disturbing anything else (never the machine's own 6379/27017).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';

export interface Backend {
  url: string;
  /** Stops the server, keeping its port and data dir for `restart`. */
  stop(): Promise<void>;
  /** Starts it again on the same port over the same data dir and waits until it is ready. */
  restart(): Promise<void>;
  /** Stops it and removes its data dir. */
  dispose(): Promise<void>;
  /** Sends the running server a signal: SIGSTOP freezes it (it neither answers nor drops connections), SIGCONT thaws it. */
  signal(signal: NodeJS.Signals): void;
}

/** Whether an executable is on PATH: tests that need one skip with a reason when it is not. */
export function onPath(binary: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, binary), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** A name no other test run uses, for databases and key prefixes. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** The same MongoDB URL pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(url);
  if (!match) throw new Error(`Not a MongoDB URL: ${url}`);
  return `${match[1]}/${database}${match[2] ?? ''}`;
}

/** A private redis-server; `extraArgs` are more of its command-line options. */
export async function startRedis(extraArgs: readonly string[] = []): Promise<Backend> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    ...extraArgs,
  ];
  return manage('redis-server', args, port, dir, `redis://127.0.0.1:${port}`, async () => {});
}

/**
 * A redis-server on `port` (chosen beforehand, so that other servers' arguments can name it)
 * with the arguments `args` gives for its data dir: a data node, or with `--sentinel` a
 * Sentinel. `restart` brings it back on the same port over the same dir, as a restart policy would.
 */
export async function startRedisOn(port: number, args: (dir: string) => string[]): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  return manage('redis-server', args(dir), port, dir, `redis://127.0.0.1:${port}`, async () => {});
}

export interface SentinelSetup {
  /** The service's REDIS_URL for it. */
  url: string;
  masterName: string;
  primary: Backend;
  replica: Backend;
  /** Asks a Sentinel for the master's port (it changes with a failover). */
  masterPort(): Promise<number>;
  /** `SENTINEL FAILOVER`: the replica becomes the master. */
  failover(): Promise<void>;
  dispose(): Promise<void>;
}

/** A primary, its replica and three Sentinels watching them, as operators run Redis HA. */
export async function startSentinelSetup(): Promise<SentinelSetup> {
  const masterName = 'tokenservice';
  // Without the default 5 s pause before a full sync, the replica is in sync at once (and the
  // old master again soon after a failover).
  const noSyncDelay = ['--repl-diskless-sync-delay', '0'];
  const primary = await startRedis(noSyncDelay);
  const primaryPort = new URL(primary.url).port;
  const replica = await startRedis([...noSyncDelay, '--replicaof', '127.0.0.1', primaryPort]);
  const sentinels = await Promise.all([1, 2, 3].map(() => startSentinel(masterName, Number(primaryPort))));
  await sentinelsReady(sentinels, masterName, replica.url);
  const ask = async <T>(command: string[]): Promise<T> => {
    const client = new Redis({ port: sentinels[0]?.port, host: '127.0.0.1', lazyConnect: true });
    try {
      return (await client.call('SENTINEL', ...command)) as T;
    } finally {
      client.disconnect();
    }
  };
  return {
    url: `redis+sentinel://${sentinels.map(({ port }) => `127.0.0.1:${port}`).join(',')}/${masterName}`,
    masterName,
    primary,
    replica,
    masterPort: async () => Number((await ask<string[]>(['GET-MASTER-ADDR-BY-NAME', masterName]))[1]),
    failover: async () => {
      await ask(['FAILOVER', masterName]);
    },
    async dispose() {
      await Promise.all([
        ...sentinels.map((sentinel) => sentinel.dispose()),
        primary.dispose(),
        replica.dispose(),
      ]);
    },
  };
}

export interface ClusterSetup {
  /** The service's REDIS_URL for it. */
  url: string;
  /** Every node, by the port it listens on: three primaries and a replica of each at the start. */
  nodes: Map<number, Backend>;
  dispose(): Promise<void>;
}

/**
 * A Redis Cluster of three shards, each a primary and one replica, as operators run it: a shard
 * fails over to its replica (after `--cluster-node-timeout`, 2 s here) when its primary is lost.
 */
export async function startClusterSetup(): Promise<ClusterSetup> {
  const nodes = new Map<number, Backend>();
  for (let i = 0; i < 6; i++) {
    // The cluster bus of its own, rather than the port + 10000 by default, which may not exist.
    const backend = await startRedis([
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(await freePort()),
      '--cluster-node-timeout',
      '2000',
      '--repl-diskless-sync-delay',
      '0',
    ]);
    nodes.set(Number(new URL(backend.url).port), backend);
  }
  const dispose = () => Promise.all([...nodes.values()].map((node) => node.dispose())).then(() => {});
  const addresses = [...nodes.keys()].map((port) => `127.0.0.1:${port}`);
  const created = await new Promise<string>((resolve) => {
    const cli = spawn(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    cli.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    cli.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    cli.once('exit', (code) => resolve(code === 0 ? '' : output || `redis-cli exited ${code}`));
  });
  if (created) {
    await dispose();
    throw new Error(`redis-cli --cluster create failed: ${created}`);
  }
  // Every node must see the whole cluster, and every replica be in sync, before a test may
  // rely on a failover.
  for (const node of nodes.values()) {
    await waitUntil(async () => {
      const client = new Redis(node.url, { lazyConnect: true });
      try {
        const [cluster, replication] = await Promise.all([
          client.cluster('INFO'),
          client.info('replication'),
        ]);
        if (!String(cluster).includes('cluster_state:ok')) throw new Error('cluster not ready yet');
        if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
          throw new Error('replica not in sync yet');
      } finally {
        client.disconnect();
      }
    }, 30_000);
  }
  return { url: `redis+cluster://${addresses.join(',')}`, nodes, dispose };
}

/**
 * A private Sentinel watching `masterName` at 127.0.0.1:`masterPort`, quorum 2; `extraConf` are
 * more lines of its configuration (a password, say).
 */
export async function startSentinel(
  masterName: string,
  masterPort: number,
  extraConf: readonly string[] = [],
): Promise<Backend & { port: number }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${masterName} 1000`,
      `sentinel failover-timeout ${masterName} 5000`,
      ...extraConf,
      '',
    ].join('\n'),
  );
  const backend = await manage(
    'redis-server',
    [conf, '--sentinel'],
    port,
    dir,
    `redis://127.0.0.1:${port}`,
    async () => {},
  );
  return { ...backend, port };
}

/**
 * Waits until a failover can happen: the replica at `replicaUrl` is in sync, and every Sentinel
 * knows it and the other Sentinels. Sentinels learn both only through the master (its INFO every
 * 10 s, its hello channel every 2 s): a master killed before that, as on a loaded machine, is
 * never replaced. `password` opens the replica and the Sentinels that require one.
 */
export async function sentinelsReady(
  sentinels: readonly { port: number }[],
  masterName: string,
  replicaUrl: string,
  password?: string,
): Promise<void> {
  await waitUntil(async () => {
    const client = new Redis(replicaUrl, { lazyConnect: true, password });
    try {
      if (!(await client.info('replication')).includes('master_link_status:up'))
        throw new Error('not in sync yet');
    } finally {
      client.disconnect();
    }
  }, 20_000);
  await waitUntil(async () => {
    for (const { port } of sentinels) {
      const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, password });
      try {
        const master = (await client.call('SENTINEL', 'MASTER', masterName)) as string[];
        const others = master[master.indexOf('num-other-sentinels') + 1];
        if (others !== String(sentinels.length - 1))
          throw new Error(`Sentinel ${port} knows ${others} others`);
        const replicas = (await client.call('SENTINEL', 'REPLICAS', masterName)) as string[][];
        const flags = replicas[0]?.[replicas[0].indexOf('flags') + 1];
        if (flags !== 'slave') throw new Error(`Sentinel ${port}: replica not ready yet (${flags})`);
      } finally {
        client.disconnect();
      }
    }
  }, 30_000);
}

/** A private FerretDB; `extraArgs` are more of its options (`--setup-username`, ...). */
export async function startFerretDb(extraArgs: readonly string[] = []): Promise<Backend> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-'));
  const args = [
    '--handler=sqlite',
    `--sqlite-url=file:${dir}/`,
    `--state-dir=${dir}`,
    `--listen-addr=127.0.0.1:${port}`,
    // The default debug listener is a fixed port; two instances would clash on it.
    '--debug-addr=-',
    '--telemetry=disable',
    '--log-level=error',
    ...extraArgs,
  ];
  const url = `mongodb://127.0.0.1:${port}/test`;
  // FerretDB accepts TCP before its backend is usable, so also wait for a ping.
  return manage('ferretdb', args, port, dir, url, () => ping(url));
}

const running = new Set<ChildProcess>();
// A test that crashes must not leave servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

async function manage(
  binary: string,
  args: string[],
  port: number,
  dir: string,
  url: string,
  ready: () => Promise<void>,
): Promise<Backend> {
  let child: ChildProcess | undefined;
  const start = async () => {
    const spawned = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    spawned.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    running.add(spawned);
    spawned.once('exit', () => running.delete(spawned));
    child = spawned;
    await waitUntil(async () => {
      if (spawned.exitCode !== null || spawned.signalCode !== null) {
        throw new Error(`${binary} exited (${spawned.exitCode ?? spawned.signalCode}): ${stderr}`);
      }
      await tcpConnect(port);
      await ready();
    }, 20000);
  };
  const stop = async () => {
    const current = child;
    child = undefined;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    current.kill('SIGTERM');
    const timer = setTimeout(() => current.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return {
    url,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      child?.kill('SIGCONT');
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    signal: (signal) => {
      child?.kill(signal);
    },
  };
}

function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

async function ping(url: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1000 });
  try {
    await client.db().command({ ping: 1 });
  } finally {
    await client.close();
  }
}

/** Retries `check` until it resolves; a failure is rethrown once `timeoutMs` has passed. */
async function waitUntil(check: () => Promise<void>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline || (error instanceof Error && error.message.includes(' exited (')))
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * Why a suite that needs private Redis and FerretDB servers cannot run on this machine, or
 * false when it can. The reason is printed, so a skipped suite never goes unnoticed.
 */
export function realServersMissing(suite: string): string | false {
  const missing = ['redis-server', 'ferretdb'].filter((binary) => !onPath(binary));
  if (missing.length === 0) return false;
  const reason = `${suite} not run: ${missing.join(' and ')} not on PATH`;
  console.log(`# ${reason}`);
  return reason;
}
