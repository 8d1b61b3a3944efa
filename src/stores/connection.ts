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
