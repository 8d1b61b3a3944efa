/**
 * The invalidation channel the per-worker caches trust: one Redis pub/sub channel every node
 * subscribes to on its own connection (a subscribed ioredis connection runs no commands), and
 * on which every store write publishes what it changed after it committed.
 *
 * A cache may answer only while the channel is provably live: its subscriber is ready and a
 * message (a heartbeat at least) arrived since it last went down and within the overdue time.
 * Otherwise caches are flushed and bypassed, so a write whose message was missed is never
 * hidden by a stale entry.
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connect.ts';

const CHANNEL = 'cache:invalidate';
const HEARTBEAT = 'heartbeat';
export const FLUSH = '*';

export interface InvalidationTiming {
  heartbeatMs: number;
  /** Without any message for this long the subscription counts as silently dead. */
  overdueMs: number;
}

const DEFAULT_TIMING: InvalidationTiming = { heartbeatMs: 500, overdueMs: 1500 };

/** Past this many changes waiting to be sent, one flush of every cache stands for them all. */
const MAX_UNSENT = 1000;
const FLUSH_MESSAGE = JSON.stringify([FLUSH, FLUSH]);

type Listener = (topic: string, key: string) => void;

export interface Invalidations {
  /** True while a cache may answer from memory. */
  readonly live: boolean;
  /** Grows with every invalidation seen and every flush: a load that saw it change is not cached. */
  readonly sequence: number;
  /** `key` of `topic` changed; topic `*`: every cache must flush. */
  listen(listener: Listener): void;
  /** Forgets the key here at once, then tells every node, again and again until Redis takes it. Never throws. */
  changed(topic: string, key: string): Promise<void>;
}

export class RedisInvalidations implements Invalidations {
  #sequence = 0;
  #confirmedAt = 0;
  #downAt = 0;
  #listeners: Listener[] = [];
  #heartbeat: NodeJS.Timeout;
  #closed = false;
  /**
   * Messages that did not get through, each with the number of the last change it stands
   * for: each heartbeat sends them again, and a message is done once the send of its latest
   * change got through (the same key may change again while an earlier send is in flight).
   */
  readonly #unsent = new Map<string, number>();
  #unsentChanges = 0;
  /** Messages being sent again right now: a slow send is not doubled by the next heartbeat. */
  readonly #resending = new Set<string>();
  readonly #subscriber: RedisClient;
  readonly #publisher: RedisClient;
  readonly #timing: InvalidationTiming;
  readonly #onPublishFailure: (error: Error) => void;

  constructor(
    publisher: RedisClient,
    timing: InvalidationTiming = DEFAULT_TIMING,
    onPublishFailure: (error: Error) => void = () => {},
  ) {
    this.#publisher = publisher;
    this.#timing = timing;
    this.#onPublishFailure = onPublishFailure;
    // duplicate() follows whatever shape (single, Sentinel, Cluster) the publisher was built with.
    // Off: ioredis's own resubscription on reconnect drops its promise, so a connection lost
    // again at once rejected it unhandled, which ends the worker; the 'ready' handler below
    // subscribes on every connection and handles its failure.
    this.#subscriber =
      publisher instanceof Cluster ? publisher.duplicate() : publisher.duplicate({ autoResubscribe: false });
    this.#subscriber.on('message', (_channel: string, message: string) => this.#receive(message));
    this.#subscriber.on('ready', () => {
      this.#subscriber.subscribe(CHANNEL).then(
        () => this.#beat(),
        () => this.#down(),
      );
    });
    for (const event of ['close', 'reconnecting', 'end', 'error'])
      this.#subscriber.on(event, () => this.#down());
    this.#subscriber.connect().catch(() => {});
    this.#heartbeat = setInterval(() => this.#beat(), timing.heartbeatMs).unref();
  }

  get live(): boolean {
    const now = Date.now();
    const live =
      this.#subscriber.status === 'ready' &&
      this.#confirmedAt > this.#downAt &&
      now - this.#confirmedAt < this.#timing.overdueMs;
    if (!live && this.#confirmedAt >= this.#downAt) this.#down(now);
    return live;
  }

  get sequence(): number {
    return this.#sequence;
  }

  listen(listener: Listener): void {
    this.#listeners.push(listener);
  }

  async changed(topic: string, key: string): Promise<void> {
    this.#invalidate(topic, key);
    const message = JSON.stringify([topic, key]);
    try {
      await this.#publisher.publish(CHANNEL, message);
    } catch (error) {
      // The write is committed either way. When Redis is down every subscriber is down too
      // and bypasses its cache; when only this link is, the others would keep serving the old
      // record, so the message goes again with every heartbeat until Redis takes it.
      if (!this.#closed) this.#keepUnsent(message);
      this.#onPublishFailure(error as Error);
    }
  }

  /** Sends what is still waiting once more (each send bounded by the command timeout), then stops. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    await Promise.all([...this.#unsent].map(([message, change]) => this.#resend(message, change)));
    if (this.#unsent.size > 0) {
      this.#onPublishFailure(
        new Error(`${this.#unsent.size} cache invalidation(s) never published; the 30 s re-read bounds them`),
      );
    }
    await this.#subscriber.quit().catch(() => undefined);
    // Behind Sentinels, quit() leaves the failover detector's Sentinel subscriptions open,
    // which would keep a command of the command line running: disconnect() ends them too.
    this.#subscriber.disconnect();
  }

  #receive(message: string): void {
    // Any message proves the subscription delivers, the heartbeat being only the one that always comes.
    this.#confirmedAt = Math.max(Date.now(), this.#downAt + 1);
    if (message === HEARTBEAT) return;
    const parsed = parseChange(message);
    if (Array.isArray(parsed) && typeof parsed[0] === 'string' && typeof parsed[1] === 'string') {
      this.#invalidate(parsed[0], parsed[1]);
    }
  }

  #invalidate(topic: string, key: string): void {
    this.#sequence++;
    for (const listener of this.#listeners) listener(topic, key);
  }

  /** Flushes every cache and counts the channel down until a message arrives again. */
  #down(now = Date.now()): void {
    this.#downAt = Math.max(now, this.#confirmedAt);
    this.#sequence++;
    for (const listener of this.#listeners) listener(FLUSH, FLUSH);
  }

  #keepUnsent(message: string): void {
    let kept = message;
    if (this.#unsent.size >= MAX_UNSENT && !this.#unsent.has(message)) {
      this.#unsent.clear();
      kept = FLUSH_MESSAGE;
    }
    this.#unsent.set(kept, ++this.#unsentChanges);
  }

  async #resend(message: string, change: number): Promise<void> {
    this.#resending.add(message);
    try {
      await this.#publisher.publish(CHANNEL, message);
      if (this.#unsent.get(message) === change) this.#unsent.delete(message);
    } catch {
      // Still unsent: the next heartbeat tries again.
    } finally {
      this.#resending.delete(message);
    }
  }

  #beat(): void {
    if (this.#closed) return;
    for (const [message, change] of this.#unsent) {
      if (!this.#resending.has(message)) void this.#resend(message, change);
    }
    // A lost heartbeat is what the overdue check is for; logging each would flood an outage.
    this.#publisher.publish(CHANNEL, HEARTBEAT).catch(() => {});
  }
}

/** Another node's message; anything else on the channel is only proof that it delivers. */
function parseChange(message: string): unknown {
  try {
    return JSON.parse(message);
  } catch {
    return undefined;
  }
}
