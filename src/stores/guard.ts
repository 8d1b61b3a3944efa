import { BackendUnavailable, Problem } from '../errors.ts';
import type { BackendHealth } from './backend-health.ts';

/**
 * The one place a backend outage becomes 503: every method of the guarded store rethrows an
 * error its backend's `isOutage` recognises as BackendUnavailable naming the backend, with
 * the driver's error as `cause`. Problems (DuplicateIdentity, ...) and any other error pass
 * unchanged, so a bug still surfaces as a bug and never as "try again later". While the
 * backend is known to be down, a call is refused at once without being tried: no store has
 * an undo step that must reach the backend whatever it looks like (a code given back after
 * a failed exchange is best effort).
 *
 * A Proxy rather than a wrapper class per store: every store method is async and gets the
 * same treatment, and a hand-written wrapper would restate each method of five interfaces
 * and miss the next one added. Each method still runs on the store itself, where its
 * #private state lives.
 */
export function guard<T extends object>(store: T, backend: BackendHealth): T {
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (backend.isDown()) throw new BackendUnavailable(backend.name);
        try {
          const result = await value.apply(target, args);
          backend.answered();
          return result;
        } catch (error) {
          if (error instanceof Problem || !backend.isOutage(error)) {
            backend.answered();
            throw error;
          }
          backend.failedWithOutage();
          throw Object.assign(new BackendUnavailable(backend.name), { cause: error });
        }
      };
    },
  });
}

/** `guard` for each store of a set that shares one backend. */
export function guardEach<T extends Record<string, object>>(stores: T, backend: BackendHealth): T {
  const guarded = {} as T;
  for (const key of Object.keys(stores) as (keyof T)[]) guarded[key] = guard(stores[key], backend);
  return guarded;
}
