import type { Collection } from 'mongodb';
import type { SeedLedger } from '../../deployment-model.ts';
import { insertUnique } from './unique.ts';

/** A mark under the record's name as `_id`: the `_id` index makes claiming it atomic, on FerretDB too. */
export interface SeedMarkDoc {
  _id: string;
  claimedAt: Date;
}

export const SEED_LEDGER_COLLECTION = 'seed_ledger';

export class MongoSeedLedger implements SeedLedger {
  readonly #collection: Collection<SeedMarkDoc>;

  constructor(collection: Collection<SeedMarkDoc>) {
    this.#collection = collection;
  }

  claim(record: string): Promise<boolean> {
    return insertUnique(this.#collection, { _id: record, claimedAt: new Date() });
  }

  async has(record: string): Promise<boolean> {
    return (await this.#collection.findOne({ _id: record })) !== null;
  }
}
