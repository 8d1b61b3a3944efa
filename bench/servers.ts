/**
 * The servers the bench measures, each started on a free loopback port and stopped by
 * `stopAll` (also when the run fails, is interrupted or overruns its time limit).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/backends.ts';
import { type ServiceProcess, spawnService, waitForHttp } from '../test/support/processes.ts';

export const BCRYPT_COST = Number(process.env.BCRYPT_COST ?? 10);

/**
 * The peers, and the floor under them (floor-peer.ts), each a script that prints `serving`
 * once it listens on the port it is given.
 */
const PEERS = {
  'oidc-provider': { script: 'oidc-provider-peer.ts', args: (processes: number) => [String(processes)] },
  'oauth2-server': { script: 'oauth2-server-peer.ts', args: () => [] },
  'oauth2-server-loop': { script: 'oauth2-server-peer.ts', args: () => ['loop'] },
  floor: { script: 'floor-peer.ts', args: () => [] },
} as const;

const stops: (() => Promise<void>)[] = [];

/** Registers how to stop something this run started; `stopAll` runs them newest first. */
export function stopLater(stop: () => Promise<void>): void {
  stops.push(stop);
}

export async function stopAll(): Promise<void> {
  for (let stop = stops.pop(); stop; stop = stops.pop()) await stop().catch(() => undefined);
}

export interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Spawns a child process that exits with this one, and registers its stop. */
function spawnOwned(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  // A run that fails half-way must not leave servers behind.
  const kill = () => void child.kill('SIGKILL');
  process.once('exit', kill);
  stopLater(async () => {
    process.off('exit', kill);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(kill, 5000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}

export async function startBare(): Promise<Server> {
  const port = await freePort();
  const child = spawnOwned([
    '-e',
    `require('node:http').createServer({ keepAliveTimeout: 65000 }, (req, res) => {
       res.setHeader('Content-Type', 'application/json');
       res.end(JSON.stringify({ name: 'token-service', version: '1.0.0' }));
     }).listen(${port}, '127.0.0.1');`,
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(url);
  return { url, pid: child.pid ?? 0, stop: async () => void child.kill() };
}

/**
 * A peer (oidc-provider-peer.ts with `processes` processes, or oauth2-server-peer.ts) once
 * every process listens.
 */
export async function startPeer(name: keyof typeof PEERS, processes = 1): Promise<Server> {
  const port = await freePort();
  const { script, args } = PEERS[name];
  const child = spawnOwned(
    [fileURLToPath(new URL(`./${script}`, import.meta.url)), String(port), ...args(processes)],
    { BCRYPT_COST: String(BCRYPT_COST) },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${output}`)), 30_000);
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
      if (/^serving$/m.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}):\n${output}`));
    });
  });
  // oidc-provider's warnings about the development adapter are expected; keep reading so it never blocks.
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid ?? 0,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The service's real entry point, in a temp dir of its own, once all its workers serve. */
export async function startService(env: Record<string, string>): Promise<ServiceProcess> {
  const cwd = await mkdtemp(join(tmpdir(), 'bench-'));
  stopLater(() => rm(cwd, { recursive: true, force: true }));
  const service = spawnService({
    cwd,
    env: {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      KEYS_DIR: join(cwd, 'keys'),
      LOG_DIR: join(cwd, 'log'),
      BCRYPT_COST: String(BCRYPT_COST),
      ...env,
    },
  });
  stopLater(() => service.stop());
  await waitForHttp(service.url, { service, timeoutMs: 60_000 });
  // However many workers the settings give it (one per core on real backends, unless WORKERS says).
  await service.waitForRecord((record) => /^All \d+ worker\(s\) serving/.test(String(record.msg)));
  return service;
}
