import type { ClientStore, OAuthClient, Scope, ScopeStore } from '../types.ts';

export class MemoryClientStore implements ClientStore {
  readonly #byName = new Map<string, OAuthClient>();

  async findByName(name: string): Promise<OAuthClient | null> {
    const client = this.#byName.get(name);
    return client ? structuredClone(client) : null;
  }

  async createIfAbsent(client: OAuthClient): Promise<boolean> {
    if (this.#byName.has(client.name)) return false;
    this.#byName.set(client.name, structuredClone(client));
    return true;
  }

  async updateSecret(name: string, secretDigest: string): Promise<boolean> {
    const client = this.#byName.get(name);
    if (!client) return false;
    client.secretDigest = secretDigest;
    return true;
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
