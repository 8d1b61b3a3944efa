import { Cluster } from 'ioredis';
import { NotReplicated } from '../../errors.ts';
import type { RedisClient } from './connect.ts';
import { runScript, type Script } from './scripts.ts';

/** How a store's write scripts reach Redis. */
export interface ScriptWrites {
  /** Runs a write script; resolves with its reply once the write counts. */
  run(s: Script, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
}

/** Writes that count once the server has run them: no replica is waited for. */
export function immediateWrites(redis: RedisClient): ScriptWrites {
  return { run: (s, keys, args) => runScript(redis, s, keys, args) };
}

interface PendingWrite {
  s: Script;
  keys: readonly string[];
  args: readonly (string | number)[];
  /** Send the script's text: the server's script cache did not know it. */
  asText: boolean;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/**
 * Writes that count only once `replicas` replicas have them, so that a failover to one of
 * them loses none of them: Redis `WAIT`, which covers every earlier write of the connection
 * it is sent on. WAIT holds up that connection until it returns, so these writes have a
 * connection of their own. They travel in batches, one at a time: the scripts of every write
 * that arrived while the previous batch was out, then one WAIT for all of them, in one
 * pipeline (so on one connection, even across a reconnection). A batch the replicas do not
 * confirm within `timeoutMs` fails every write in it with NotReplicated (503): it was made on
 * the primary and may still reach the replicas, and the client's retry finds it there.
 */
export function acknowledgedWrites(redis: RedisClient, replicas: number, timeoutMs: number): ScriptWrites {
  // A Cluster's writes go to many primaries; one WAIT covers one connection to one of them.
  if (redis instanceof Cluster)
    throw new Error('Writes acknowledged by replicas need one primary, not a Cluster');
  let queue: PendingWrite[] = [];
  let sending = false;

  async function sendBatches(): Promise<void> {
    try {
      while (queue.length > 0) await sendBatch();
    } finally {
      sending = false;
    }
  }

  async function sendBatch(): Promise<void> {
    const batch = queue;
    queue = [];
    const pipeline = redis.pipeline();
    for (const { s, keys, args, asText } of batch) {
      if (asText) pipeline.eval(s.lua, keys.length, ...keys, ...args);
      else pipeline.evalsha(s.sha, keys.length, ...keys, ...args);
    }
    pipeline.wait(replicas, timeoutMs);
    const replies: [unknown, unknown][] =
      (await pipeline.exec().catch((error: unknown) => batch.map(() => [error, null]))) ?? [];
    const [waitError, acknowledged] = replies[batch.length] ?? [new Error('No reply to WAIT'), 0];
    const confirmed = !waitError && Number(acknowledged) >= replicas;
    batch.forEach((write, index) => {
      const [error, reply] = replies[index] ?? [new Error('No reply to the write'), null];
      // Not run at all: sent again, as text, with the next batch.
      if (error instanceof Error && error.message.startsWith('NOSCRIPT'))
        queue.push({ ...write, asText: true });
      else if (error) write.reject(error);
      else if (!confirmed) write.reject(Object.assign(new NotReplicated('Redis'), { cause: waitError }));
      else write.resolve(reply);
    });
  }

  return {
    run(s, keys, args) {
      return new Promise((resolve, reject) => {
        queue.push({ s, keys, args, asText: false, resolve, reject });
        if (sending) return;
        sending = true;
        // Writes made in the same tick share the first batch too.
        process.nextTick(() => void sendBatches());
      });
    },
  };
}
