import { type Collection, type Document, MongoServerError, type OptionalUnlessRequiredId } from 'mongodb';

/**
 * True for a unique-index violation. MongoDB (and FerretDB on inserts) answers code 11000;
 * FerretDB 1.x on SQLite answers an update that breaks a unique index with code 1 and the
 * SQLite message instead, so that shape counts too.
 */
export function isDuplicateKey(error: unknown): boolean {
  if (!(error instanceof MongoServerError)) return false;
  return error.code === 11000 || (error.code === 1 && error.message.includes('UNIQUE constraint failed'));
}

/**
 * Inserts the document unless a unique index already holds its key, and says whether it did.
 * Insert-and-catch rather than find-then-insert: of several processes inserting at once
 * exactly one succeeds, and an existing (maybe edited) document is never touched.
 */
export async function insertUnique<T extends Document>(
  collection: Collection<T>,
  doc: OptionalUnlessRequiredId<T>,
): Promise<boolean> {
  try {
    await collection.insertOne(doc);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}
