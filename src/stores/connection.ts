/** What connecting to a backend needs: when to give up starting, and where to say what happens. */
export interface ConnectOptions {
  /** Epoch milliseconds; connecting rejects, naming the backend and host, when it is reached. */
  deadline: number;
  log: (message: string) => void;
}

/** A connected backend: the driver's client, and how to let go of it. */
export interface Connection<Client> {
  client: Client;
  close(): Promise<void>;
}

/** How long to wait before retry `attempt` (1-based): `baseMs`, doubling, at most 2000 ms. */
export function backoff(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.min(attempt - 1, 10), 2000);
}

/** Socket errors: the server cannot be reached from here right now, whichever driver saw them. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function isNetworkError(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' && NETWORK_CODES.has(code);
}

export class TimeoutError extends Error {}

/** Rejects when `promise` has not settled within `ms`; the caller cleans up what is left. */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimeoutError(`no answer within ${Math.max(0, ms)} ms`)),
      Math.max(0, ms),
    );
    // Never what keeps a stopping process alive.
    timer.unref();
  });
  // The loser of the race must not surface later as an unhandled rejection.
  promise.catch(() => {});
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
