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
  const pending = new Map<number, Pending>();
  /** The job each busy thread is running, so a thread that dies fails only its own job. */
  const running = new Map<Worker, number>();
  const idle: Worker[] = [];
  const queue: { id: number; job: Job }[] = [];
  const threads = new Set<Worker>();
  let nextId = 0;
  let closing = false;
  // A real hash at the configured cost, so verifyNothing costs what a real verification does.
  const decoy = bcrypt.hashSync('decoy', options.cost);
  for (let i = 0; i < Math.max(1, options.threads); i++) startThread();

  function startThread(): void {
    const worker = new Worker(workerUrl);
    threads.add(worker);
    worker.on('message', (reply: Reply) => {
      running.delete(worker);
      const waiter = pending.get(reply.id);
      pending.delete(reply.id);
      if (waiter) reply.ok ? waiter.resolve(reply.value) : waiter.reject(new Error(reply.message));
      dispatch(worker);
    });
    // A thread that dies (out of memory, a crash) fails its own job and is replaced, so no
    // request waits forever on a thread that is gone.
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      threads.delete(worker);
      const at = idle.indexOf(worker);
      if (at >= 0) idle.splice(at, 1);
      const id = running.get(worker);
      running.delete(worker);
      if (id !== undefined) {
        pending.get(id)?.reject(new Error('The password hashing thread stopped'));
        pending.delete(id);
      }
      if (!closing) startThread();
    });
    dispatch(worker);
  }

  function dispatch(worker: Worker): void {
    const next = queue.shift();
    if (!next) {
      idle.push(worker);
      return;
    }
    running.set(worker, next.id);
    worker.postMessage(next);
  }

  function run(job: Job): Promise<string | boolean> {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      queue.push({ id, job });
      const worker = idle.pop();
      if (worker) dispatch(worker);
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
      closing = true;
      await Promise.all([...threads].map((worker) => worker.terminate()));
    },
  };
}
