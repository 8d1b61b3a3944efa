/**
 * A Map of at most `limit` entries: a new key set in a full one forgets the oldest entry
 * first (insertion order). For memos on hot paths, where keeping a least-recently-used order
 * would cost a delete and a set on every hit.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly #limit: number;

  constructor(limit: number) {
    super();
    this.#limit = limit;
  }

  override set(key: K, value: V): this {
    if (this.size >= this.#limit && !this.has(key)) {
      const oldest = this.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}
