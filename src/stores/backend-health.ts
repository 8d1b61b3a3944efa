import { withTimeout } from './connection.ts';

/**
 * What the service knows about a backend's health, so that requests fail fast while it is
 * down instead of each waiting out a driver timeout (2 s on a frozen Redis, up to 10 s on a
 * frozen MongoDB), which would also pile up waiting requests in every worker.
 *
 * Down: after a failed heartbeat, or after three outage errors in a row with no success
 * between them (one reset connection of a pool is not an outage; three in a row are).
 * Up again: after a heartbeat succeeds, so the first request after recovery goes through
 * without a request of a client being spent on finding out.
 */
export interface BackendHealth {
  readonly name: string;
  /** Whether an error of this backend's driver means the backend cannot be reached now. */
  isOutage(error: unknown): boolean;
  /** True while calls should not be tried: answer 503 at once. */
  isDown(): boolean;
  /** A call reached the backend and got an answer (success, or a refusal of the call itself). */
  answered(): void;
  /** A call failed with an outage error. */
  failedWithOutage(): void;
  /** Stops the heartbeat; the process can exit. */
  stop(): void;
}

/**
 * One `ping` per interval, never two at once: a ping slower than its timeout counts as failed.
 * While down, the next ping follows at once, so one is nearly always waiting on the server and
 * its answer, the first thing a thawed or restarted server sends, ends the outage.
 */
const HEARTBEAT_INTERVAL_MS = 1000;
const RECHECK_WHILE_DOWN_MS = 100;
const PING_TIMEOUT_MS = 1500;
const FAILURES_IN_A_ROW = 3;

export function watchBackend(options: {
  name: string;
  isOutage: (error: unknown) => boolean;
  ping: () => Promise<unknown>;
}): BackendHealth {
  let down = false;
  let failuresInARow = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const beat = async () => {
    const healthy = await withTimeout(Promise.resolve().then(options.ping), PING_TIMEOUT_MS).then(
      () => true,
      () => false,
    );
    if (stopped) return;
    down = !healthy;
    if (healthy) failuresInARow = 0;
    timer = setTimeout(beat, down ? RECHECK_WHILE_DOWN_MS : HEARTBEAT_INTERVAL_MS);
    timer.unref();
  };
  timer = setTimeout(beat, HEARTBEAT_INTERVAL_MS);
  timer.unref();

  return {
    name: options.name,
    isOutage: options.isOutage,
    isDown: () => down,
    answered() {
      failuresInARow = 0;
    },
    failedWithOutage() {
      failuresInARow++;
      if (failuresInARow >= FAILURES_IN_A_ROW) down = true;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
