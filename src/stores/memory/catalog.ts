import type { ClientChanges, ClientStore, OAuthClient, Scope, ScopeStore } from '../../oauth/model.ts';
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
    const { secretDigest, redirectUris, grants, updatedAt } = copyRecord(changes);
    if (secretDigest !== undefined) client.secretDigest = secretDigest;
    if (redirectUris !== undefined) client.redirectUris = redirectUris;
    if (grants !== undefined) client.grants = grants;
    if (updatedAt !== undefined) client.updatedAt = updatedAt;
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
