import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Application, createApplication } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { generateKeys } from '../../src/oauth/key-rotation.ts';
import { readPackageInfo } from '../../src/package-info.ts';
import { openKeyRingStore } from '../../src/services.ts';
import { freePort } from './backends.ts';

export type Backend = 'memory' | 'real';

/** The backends the HTTP suites run against: memory always, the real servers when CI set their URLs. */
export function backends(): Backend[] {
  return process.env.MONGODB_URL && process.env.REDIS_URL ? ['memory', 'real'] : ['memory'];
}

export function describeBackendSkip(): void {
  if (!process.env.MONGODB_URL || !process.env.REDIS_URL) {
    console.log('# HTTP suites run against memory only: MONGODB_URL and REDIS_URL are not both set');
  }
}

export interface TestServer {
  url: string;
  app: Application;
  keysDir: string;
  logDir: string;
  close(): Promise<void>;
}

/** A MongoDB URL pointing at a database of its own, so test servers never see each other's data. */
export function isolatedMongoUrl(base: string): string {
  const url = new URL(base);
  url.pathname = `/test_${randomUUID().replaceAll('-', '')}`;
  return url.href;
}

/**
 * Starts the real application in this process on an ephemeral loopback port, with its own
 * key and log directories, and a low bcrypt cost so tests stay quick.
 */
export async function startTestServer(
  options: {
    backend?: Backend;
    env?: Record<string, string>;
    keysDir?: string;
    /**
     * APP_URL is the server's own address, as a browser must see it for the sign-in page to
     * take its own form's posts (the port is chosen before the start).
     */
    ownAppUrl?: boolean;
    /** Receives the lines of the process log (start-up, warnings); by default they are dropped. */
    log?: (message: string) => void;
  } = {},
): Promise<TestServer> {
  const listenPort = options.ownAppUrl ? await freePort() : 0;
  const root = await mkdtemp(join(tmpdir(), 'token-service-'));
  const keysDir = options.keysDir ?? join(root, 'keys');
  if (!options.keysDir) await generateKeys(openKeyRingStore(keysDir), { force: false });
  const logDir = join(root, 'log');
  const real = options.backend === 'real';
  const config = loadConfig(
    {
      HOST: '127.0.0.1',
      PORT: '0',
      KEYS_DIR: keysDir,
      LOG_DIR: logDir,
      BCRYPT_COST: '4',
      ...(options.ownAppUrl ? { APP_URL: `http://127.0.0.1:${listenPort}` } : {}),
      ...(real
        ? { MONGODB_URL: isolatedMongoUrl(process.env.MONGODB_URL ?? ''), REDIS_URL: process.env.REDIS_URL }
        : {}),
      ...options.env,
    },
    readPackageInfo(),
  );
  const app = await createApplication(config, { log: options.log ?? (() => undefined) });
  await new Promise<void>((resolve) => app.server.listen(listenPort, '127.0.0.1', resolve));
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    keysDir,
    logDir,
    async close() {
      app.server.closeAllConnections();
      await new Promise((resolve) => app.server.close(resolve));
      await app.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
