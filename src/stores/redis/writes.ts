import { Cluster } from 'ioredis';
import { NotReplicated } from '../../errors.ts';
import type { RedisClient } from './connect.ts';
import { runScript, type Script } from './scripts.ts';

/** How a store's write scripts reach Redis. */
export interface ScriptWrites {
  /** Whether a write counts only once replicas confirm it, some time after the server ran it. */
  readonly acknowledged: boolean;
  /** Runs a write script; resolves with its reply once the write counts. */
  run(s: Script, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
}

/** Writes that count once the server has run them: no replica is waited for. */
export function immediateWrites(redis: RedisClient): ScriptWrites {
  return { acknowledged: false, run: (s, keys, args) => runScript(redis, s, keys, args) };
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
 * Batches out at once. The second waits in Redis behind the first one's WAIT, so the
 * replicas' confirmations follow each other without a round trip to this process between
 * them (measured: with one batch out, refreshes behind Sentinels ran at 0.8 times the rate
 * without replicas; with two, at the same rate). A write thus waits for at most two WAITs,
 * which the command timeout of its connection allows for (redis/connect.ts).
 */
const BATCHES_OUT = 2;

/**
 * Writes that count only once `replicas` replicas have them, so that a failover to one of
 * them loses none of them: Redis `WAIT`, which covers every earlier write of the connection
 * it is sent on. WAIT holds up that connection until it returns, so these writes have a
 * connection of their own. They travel in batches: the scripts of every write that arrived
 * while earlier batches were out, then one WAIT for all of them, in one pipeline (so on one
 * connection, even across a reconnection). A batch the replicas do not confirm within
 * `timeoutMs` fails every write in it with NotReplicated (503): it was made on the primary
 * and may still reach the replicas, and the client's retry finds it there.
 */
export function acknowledgedWrites(redis: RedisClient, replicas: number, timeoutMs: number): ScriptWrites {
  // A Cluster's writes go to many primaries; one WAIT covers one connection to one of them.
  if (redis instanceof Cluster)
    throw new Error('Writes acknowledged by replicas need one primary, not a Cluster');
  let queue: PendingWrite[] = [];
  let out = 0;
  let scheduled = false;

  /** Sends the queue as the next batch once a batch may go out; writes of one tick go together. */
  function schedule(): void {
    if (scheduled || out >= BATCHES_OUT || queue.length === 0) return;
    scheduled = true;
    process.nextTick(() => {
      scheduled = false;
      out++;
      sendBatch().finally(() => {
        out--;
        schedule();
      });
    });
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
    acknowledged: true,
    run(s, keys, args) {
      return new Promise((resolve, reject) => {
        queue.push({ s, keys, args, asText: false, resolve, reject });
        schedule();
      });
    },
  };
}
