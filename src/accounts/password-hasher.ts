import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

/**
 * bcrypt in a small pool of worker threads. A bcrypt verification at cost 10 takes tens of
 * milliseconds of pure computation; run on the HTTP worker's event loop it would stall every
 * other request on that worker for that long.
 */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
  /** Spends the time of one verification without a real hash, so unknown accounts take as long as known ones. */
  verifyNothing(password: string): Promise<void>;
  close(): Promise<void>;
}

type Job = { op: 'hash'; password: string; cost: number } | { op: 'verify'; password: string; hash: string };
type Reply = { id: number; ok: true; value: string | boolean } | { id: number; ok: false; message: string };

interface Pending {
  resolve: (value: string | boolean) => void;
  reject: (error: Error) => void;
}

export function createPasswordHasher(options: { cost: number; threads: number }): PasswordHasher {
  const workerUrl = new URL('./password-hasher.worker.ts', import.meta.url);
  const threads = Array.from({ length: Math.max(1, options.threads) }, () => startThread());
  const pending = new Map<number, Pending>();
  const idle: Worker[] = [...threads];
  const queue: { id: number; job: Job }[] = [];
  let nextId = 0;
  // A real hash at the configured cost, so verifyNothing costs what a real verification does.
  const decoy = bcrypt.hashSync('decoy', options.cost);

  function startThread(): Worker {
    const worker = new Worker(workerUrl);
    worker.on('message', (reply: Reply) => {
      const waiter = pending.get(reply.id);
      pending.delete(reply.id);
      if (waiter) reply.ok ? waiter.resolve(reply.value) : waiter.reject(new Error(reply.message));
      dispatch(worker);
    });
    worker.on('error', (error) => {
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    });
    return worker;
  }

  function dispatch(worker: Worker): void {
    const next = queue.shift();
    if (next) worker.postMessage(next);
    else idle.push(worker);
  }

  function run(job: Job): Promise<string | boolean> {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      const worker = idle.pop();
      if (worker) worker.postMessage({ id, job });
      else queue.push({ id, job });
    });
  }

  return {
    async hash(password) {
      return (await run({ op: 'hash', password, cost: options.cost })) as string;
    },
    async verify(password, hash) {
      return (await run({ op: 'verify', password, hash })) as boolean;
    },
    async verifyNothing(password) {
      await run({ op: 'verify', password, hash: decoy });
    },
    async close() {
      await Promise.all(threads.map((worker) => worker.terminate()));
    },
  };
}
