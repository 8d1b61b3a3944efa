import {
  CHANGEABLE_CLIENT_FIELDS,
  type ClientChanges,
  type ClientStore,
  type OAuthClient,
  type Scope,
  type ScopeStore,
} from '../../oauth/model.ts';
import { copyRecord } from '../record-copy.ts';

export class MemoryClientStore implements ClientStore {
  readonly #byName = new Map<string, OAuthClient>();

  async findByName(name: string): Promise<OAuthClient | null> {
    const client = this.#byName.get(name);
    return client ? copyRecord(client) : null;
  }

  async list(): Promise<OAuthClient[]> {
    return [...this.#byName.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((client) => copyRecord(client));
  }

  async createIfAbsent(client: OAuthClient): Promise<boolean> {
    if (this.#byName.has(client.name)) return false;
    this.#byName.set(client.name, copyRecord(client));
    return true;
  }

  async update(name: string, changes: ClientChanges): Promise<OAuthClient | null> {
    const client = this.#byName.get(name);
    if (!client) return null;
    // Only the changeable fields, as the MongoDB store writes them.
    const copy = copyRecord(changes);
    for (const field of CHANGEABLE_CLIENT_FIELDS)
      if (copy[field] !== undefined) Object.assign(client, { [field]: copy[field] });
    return copyRecord(client);
  }

  async delete(name: string): Promise<boolean> {
    return this.#byName.delete(name);
  }
}

export class MemoryScopeStore implements ScopeStore {
  readonly #byName = new Map<string, Scope>();

  async findByName(name: string): Promise<Scope | null> {
    const scope = this.#byName.get(name);
    return scope ? { ...scope } : null;
  }

  async createIfAbsent(scope: Scope): Promise<boolean> {
    if (this.#byName.has(scope.name)) return false;
    this.#byName.set(scope.name, { ...scope });
    return true;
  }
}
