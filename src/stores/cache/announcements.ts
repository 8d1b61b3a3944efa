/**
 * A process that caches accounts and clients says so in MongoDB, at start and every minute
 * after, so that a writer without the invalidation channel (a command line run with
 * MONGODB_URL alone) can tell that its change would go unheard for up to the 30 s re-read,
 * and refuse it.
 */
import type { CachingNodeRegistry } from '../../deployment-model.ts';

/** How often a caching process says again that it runs. */
export const ANNOUNCE_EVERY_MS = 60_000;
/**
 * How long after the last announcement caching processes still count as running: several
 * missed announcements, so that a MongoDB hiccup does not open the door, yet a deployment that
 * stopped caching (REDIS_URL removed) is free of the rule a few minutes after its last node.
 */
export const CACHING_NODES_GONE_AFTER_MS = 5 * 60_000;

/** Announces now and every minute until stopped; a failed announcement is logged, and the next one tried. */
export async function keepAnnouncing(
  registry: CachingNodeRegistry,
  log: (message: string) => void,
): Promise<{ stop(): void }> {
  let failing = false;
  const announce = async () => {
    try {
      await registry.announce(new Date());
      failing = false;
    } catch (error) {
      if (!failing) log(`could not record in MongoDB that this process caches: ${(error as Error).message}`);
      failing = true;
    }
  };
  await announce();
  const timer = setInterval(announce, ANNOUNCE_EVERY_MS).unref();
  return { stop: () => clearInterval(timer) };
}

/** When a caching process last said it runs, if recently enough that it may still; else null. */
export async function cachingNodesRunning(
  registry: CachingNodeRegistry,
  now = new Date(),
): Promise<Date | null> {
  const last = await registry.lastAnnouncement();
  return last && now.getTime() - last.getTime() < CACHING_NODES_GONE_AFTER_MS ? last : null;
}
