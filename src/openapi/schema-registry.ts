import type { TSchema } from '@sinclair/typebox';

export type JsonSchema = Record<string, unknown>;

/**
 * Turns TypeBox schemas (which are JSON Schema plus symbol keys) into plain JSON Schema for
 * the OpenAPI document. Every schema with an `$id`, at any depth, is lifted once into
 * `components.schemas` under that name and referenced with `$ref` wherever it appears.
 */
export class SchemaRegistry {
  readonly #components = new Map<string, { schema: JsonSchema; text: string }>();

  /** The schema as plain JSON Schema, with `$id`-named parts replaced by references. */
  use(schema: TSchema): JsonSchema {
    // JSON drops TypeBox's symbol keys ([Kind], [OptionalKind]) and anything not JSON.
    return this.#lift(JSON.parse(JSON.stringify(schema))) as JsonSchema;
  }

  /** Registers `schema` under `name` (whatever its `$id`) and returns a reference to it. */
  define(name: string, schema: TSchema): JsonSchema {
    const { $id: _ignored, ...rest } = this.use(schema) as JsonSchema & { $id?: unknown };
    return this.#register(name, rest);
  }

  /** `components.schemas`, sorted by name. */
  components(): Record<string, JsonSchema> {
    const names = [...this.#components.keys()].sort();
    return Object.fromEntries(names.map((name) => [name, this.#components.get(name)?.schema ?? {}]));
  }

  #lift(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((item) => this.#lift(item));
    if (typeof node !== 'object' || node === null) return node;
    const copy: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) copy[key] = this.#lift(value);
    const { $id, ...rest } = copy;
    if (typeof $id !== 'string') return copy;
    return this.#register(componentName($id), rest);
  }

  #register(name: string, schema: JsonSchema): JsonSchema {
    const text = JSON.stringify(schema);
    const existing = this.#components.get(name);
    if (existing && existing.text !== text) {
      throw new Error(`Two different schemas are named "${name}"; give one of them another $id`);
    }
    this.#components.set(name, { schema, text });
    return { $ref: `#/components/schemas/${name}` };
  }
}

/** OpenAPI component names are limited to `[A-Za-z0-9._-]`. */
function componentName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_');
}
