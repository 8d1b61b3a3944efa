import type { Collection } from 'mongodb';
import type { CachingNodeRegistry } from '../../deployment-model.ts';
import { isDuplicateKey } from './unique.ts';

/** Facts about the deployment, one document each under a fixed `_id`. */
export interface DeploymentFactDoc {
  _id: string;
  announcedAt: Date;
}

export const DEPLOYMENT_COLLECTION = 'deployment';
const CACHING_NODES = 'caching-nodes';

/**
 * One document every caching process writes the time into, keeping the latest (`$max`). Two
 * processes announcing at once may lose one of the two times on FerretDB (which does not
 * serialise updates of one document); both are "now", so either will do.
 */
export class MongoCachingNodeRegistry implements CachingNodeRegistry {
  readonly #collection: Collection<DeploymentFactDoc>;

  constructor(collection: Collection<DeploymentFactDoc>) {
    this.#collection = collection;
  }

  async announce(at: Date): Promise<void> {
    const write = () =>
      this.#collection.updateOne({ _id: CACHING_NODES }, { $max: { announcedAt: at } }, { upsert: true });
    try {
      await write();
    } catch (error) {
      // Two first announcements raced to insert the document: it exists now, so update it.
      if (!isDuplicateKey(error)) throw error;
      await write();
    }
  }

  async lastAnnouncement(): Promise<Date | null> {
    return (await this.#collection.findOne({ _id: CACHING_NODES }))?.announcedAt ?? null;
  }
}
