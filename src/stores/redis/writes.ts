import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
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
 * How often a primary known to lack replicas is asked again; the first answer that counts
 * enough of them ends the refusals.
 */
const RECHECK_REPLICAS_MS = 250;

/**
 * Seconds since a replica's last acknowledgement after which it no longer counts: replicas
 * acknowledge every second, and at once while a WAIT is pending, so one silent for longer is
 * frozen or cut off, though its primary keeps it connected until `repl-timeout` (60 s).
 */
const SILENT_REPLICA_SECONDS = 3;

/**
 * One primary as the writes see it: where their batches go, and what it says of its replicas
 * (INFO replication).
 */
interface Primary {
  pipeline(): ReturnType<Redis['pipeline']>;
  replication(): Promise<string>;
  /** A batch failed on the way (a lost connection, a slot that moved): find the primary anew. */
  failed(): void;
}

/**
 * Writes that count only once `replicas` replicas have them, so that a failover to one of
 * them loses none of them: Redis `WAIT`, which covers every earlier write of the connection
 * it is sent on. WAIT holds up that connection until it returns, so these writes have a
 * connection of their own (in a Cluster, a client of their own, with one per node). They
 * travel in batches, one primary's at a time: the scripts of every write that arrived while
 * earlier batches were out, then one WAIT for all of them, in one pipeline (so on one
 * connection, even across a reconnection). In a Cluster each write goes to the primary that
 * owns its keys' slot, and its shard's replicas confirm it. A batch the replicas do not
 * confirm within `timeoutMs` fails every write in it with NotReplicated (503): it was made on
 * the primary and may still reach the replicas, and the client's retry finds it there.
 */
export function acknowledgedWrites(
  redis: RedisClient,
  replicas: number,
  timeoutMs: number,
  log: (message: string) => void = () => {},
): ScriptWrites {
  const batchers = new Map<string, (write: PendingWrite) => void>();
  const batcherFor = (key: string, primary: Primary) => {
    let batcher = batchers.get(key);
    if (!batcher) {
      batcher = batchWrites(primary, replicas, timeoutMs, (able) =>
        log(
          `Redis primary ${key || 'named by REDIS_URL'} has ${able} of the ${replicas} replicas that REDIS_MIN_REPLICA_ACKS requires: ` +
            'sign-ins, refreshes and revocations it owns are answered 503 until it has them. ' +
            'Add replicas, or set REDIS_MIN_REPLICA_ACKS=0 to serve without them (a failover may then lose answered changes).',
        ),
      );
      batchers.set(key, batcher);
    }
    return batcher;
  };
  return {
    acknowledged: true,
    run(s, keys, args) {
      return new Promise((resolve, reject) => {
        const write = { s, keys, args, asText: false, resolve, reject };
        if (!(redis instanceof Cluster)) return batcherFor('', singlePrimary(redis))(write);
        const owner = clusterPrimary(redis, keys[0] ?? '');
        if (!owner) {
          redis.refreshSlotsCache();
          return reject(new Error('CLUSTERDOWN no primary known for the slot of the change'));
        }
        batcherFor(owner.key, owner.primary)(write);
      });
    },
  };
}

function singlePrimary(redis: Redis): Primary {
  return {
    pipeline: () => redis.pipeline(),
    replication: () => redis.info('replication'),
    // Sentinel's failover detector or a READONLY reply moves the connection to the new master.
    failed: () => {},
  };
}

/**
 * The primary that owns `key`'s slot by the client's slot map. Its pipelines go through the
 * Cluster client, which sends one whose keys are all that primary's to it on one connection.
 */
function clusterPrimary(cluster: Cluster, key: string): { key: string; primary: Primary } | undefined {
  const owner = cluster.slots[calculateSlot(key)]?.[0];
  if (owner === undefined) return undefined;
  return {
    key: owner,
    primary: {
      pipeline: () => cluster.pipeline(),
      // After a failover the slot's new owner is known only once the map is read again: ioredis
      // reads it on a MOVED reply, which a primary that is gone never sends.
      failed: () => cluster.refreshSlotsCache(),
      async replication() {
        const node = cluster
          .nodes('master')
          .find(({ options }) => `${options.host}:${options.port}` === owner);
        if (!node) throw new Error(`${owner} is no longer a primary of the Cluster`);
        return node.info('replication');
      },
    },
  };
}

/**
 * The batches of one primary. Once a WAIT has fallen short and the primary says it has fewer
 * replicas that can acknowledge than `replicas`, a write is refused at once, without being
 * made, instead of waiting out `timeoutMs` in vain; the primary is asked again until it has
 * enough. `refusing` hears when the refusals begin.
 */
function batchWrites(
  primary: Primary,
  replicas: number,
  timeoutMs: number,
  refusing: (able: number) => void,
): (write: PendingWrite) => void {
  let queue: PendingWrite[] = [];
  let out = 0;
  let scheduled = false;
  let short = false;
  let checking = false;

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
    const pipeline = primary.pipeline();
    for (const { s, keys, args, asText } of batch) {
      if (asText) pipeline.eval(s.lua, keys.length, ...keys, ...args);
      else pipeline.evalsha(s.sha, keys.length, ...keys, ...args);
    }
    pipeline.wait(replicas, timeoutMs);
    const replies: [unknown, unknown][] =
      (await pipeline.exec().catch((error: unknown) => batch.map(() => [error, null]))) ?? [];
    const [waitError, acknowledged] = replies[batch.length] ?? [new Error('No reply to WAIT'), 0];
    const confirmed = !waitError && Number(acknowledged) >= replicas;
    if (!waitError && !confirmed) void checkReplicas();
    if (replies.some(([error]) => error && !String(error).includes('NOSCRIPT'))) primary.failed();
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

  /** Asks the primary for its replicas until it has enough, refusing writes meanwhile. */
  async function checkReplicas(): Promise<void> {
    if (checking) return;
    checking = true;
    try {
      for (;;) {
        // Unknown (no answer) is not short: the writes themselves then say what is wrong.
        const able = await primary.replication().then(acknowledgingReplicas, () => replicas);
        // Said once as the refusals begin, so an operator sees why (a Cluster without replicas
        // that earlier versions served, say) without a line per request.
        if (able < replicas && !short) refusing(able);
        short = able < replicas;
        if (!short) return;
        await new Promise((resolve) => setTimeout(resolve, RECHECK_REPLICAS_MS).unref());
      }
    } finally {
      checking = false;
    }
  }

  return (write) => {
    if (short) {
      write.reject(
        Object.assign(new NotReplicated('Redis'), {
          cause: new Error(`the primary has fewer than ${replicas} replicas that acknowledge`),
        }),
      );
      return;
    }
    queue.push(write);
    schedule();
  };
}

/**
 * Replicas that can acknowledge a write now, from INFO replication: those in sync (`online`)
 * that acknowledged recently, e.g. `slave0:ip=10.0.0.2,port=6379,state=online,offset=42,lag=0`.
 */
function acknowledgingReplicas(info: string): number {
  let count = 0;
  for (const line of info.split('\n')) {
    if (!/^slave\d+:/.test(line)) continue;
    const fields = new Map(
      line
        .slice(line.indexOf(':') + 1)
        .trim()
        .split(',')
        .map((field) => [field.slice(0, field.indexOf('=')), field.slice(field.indexOf('=') + 1)]),
    );
    if (fields.get('state') === 'online' && Number(fields.get('lag')) <= SILENT_REPLICA_SECONDS) count++;
  }
  return count;
}
