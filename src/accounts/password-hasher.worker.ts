import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

type Job = { op: 'hash'; password: string; cost: number } | { op: 'verify'; password: string; hash: string };

parentPort?.on('message', ({ id, job }: { id: number; job: Job }) => {
  try {
    const value =
      job.op === 'hash'
        ? bcrypt.hashSync(job.password, job.cost)
        : bcrypt.compareSync(job.password, job.hash);
    parentPort?.postMessage({ id, ok: true, value });
  } catch (error) {
    parentPort?.postMessage({ id, ok: false, message: (error as Error).message });
  }
});
