import type { TSchema } from '@sinclair/typebox';

export type JsonSchema = Record<string, unknown>;

/**
 * Turns TypeBox schemas (which are JSON Schema plus symbol keys) into plain JSON Schema for
 * the OpenAPI document. Every schema with an `$id`, at any depth, is lifted once into
 * `components.schemas` under that name and referenced with `$ref` wherever it appears.
 * Only JSON Schema 2020-12 and OpenAPI keywords reach the document: the validator's own
 * keywords are left out, and any other keyword is a mistake the generator refuses.
 */
export class SchemaRegistry {
  readonly #components = new Map<string, { schema: JsonSchema; text: string }>();

  /** The schema as plain JSON Schema, with `$id`-named parts replaced by references. */
  use(schema: TSchema): JsonSchema {
    // JSON drops TypeBox's symbol keys ([Kind], [OptionalKind]) and anything not JSON.
    return this.#lift(JSON.parse(JSON.stringify(schema)), '#');
  }

  /** Registers `schema` under `name` (whatever its `$id`) and returns a reference to it. */
  define(name: string, schema: TSchema): JsonSchema {
    const { $id: _ignored, ...rest } = this.#standard(JSON.parse(JSON.stringify(schema)), name);
    return this.#register(name, rest);
  }

  /** `components.schemas`, sorted by name. */
  components(): Record<string, JsonSchema> {
    const names = [...this.#components.keys()].sort();
    return Object.fromEntries(names.map((name) => [name, this.#components.get(name)?.schema ?? {}]));
  }

  #lift(schema: JsonSchema, at: string): JsonSchema {
    const { $id, ...rest } = this.#standard(schema, at);
    if (typeof $id !== 'string') return rest;
    return this.#register(componentName($id), rest);
  }

  /** The schema's standard keywords, each subschema lifted in turn. */
  #standard(schema: JsonSchema, at: string): JsonSchema {
    const copy: JsonSchema = {};
    for (const [keyword, value] of Object.entries(schema)) {
      if (VALIDATOR_ONLY.has(keyword)) continue;
      if (!STANDARD.has(keyword) && !keyword.startsWith('x-')) {
        throw new Error(`Schema keyword "${keyword}" (at ${at}) is neither JSON Schema 2020-12 nor OpenAPI`);
      }
      copy[keyword] = this.#subschemas(keyword, value, `${at}/${keyword}`);
    }
    if (copy.discriminator) copy.discriminator = withMapping(schema, copy);
    return copy;
  }

  #subschemas(keyword: string, value: unknown, at: string): unknown {
    const lift = (node: unknown, where: string) =>
      typeof node === 'object' && node !== null ? this.#lift(node as JsonSchema, where) : node;
    if (SCHEMA_VALUED.has(keyword)) {
      if (Array.isArray(value))
        throw new Error(`Schema keyword "${keyword}" (at ${at}) holds a list, as in draft-07`);
      return lift(value, at);
    }
    if (SCHEMA_LISTS.has(keyword))
      return (value as unknown[]).map((item, index) => lift(item, `${at}/${index}`));
    if (SCHEMA_MAPS.has(keyword)) {
      return Object.fromEntries(
        Object.entries(value as JsonSchema).map(([name, item]) => [name, lift(item, `${at}/${name}`)]),
      );
    }
    return value;
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

/** Keywords only the request validator reads (see validation.ts); no schema reader knows them. */
const VALIDATOR_ONLY = new Set(['errorMessage']);

/** Keywords whose value is one schema, a list of schemas, or schemas by name. */
const SCHEMA_VALUED = new Set([
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'if',
  'then',
  'else',
  'not',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const SCHEMA_LISTS = new Set(['prefixItems', 'allOf', 'anyOf', 'oneOf']);
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);

/** JSON Schema 2020-12 (every vocabulary) and the OpenAPI 3.1 Schema Object's own keywords. */
const STANDARD = new Set([
  ...SCHEMA_VALUED,
  ...SCHEMA_LISTS,
  ...SCHEMA_MAPS,
  // Core
  '$schema',
  '$id',
  '$ref',
  '$anchor',
  '$dynamicRef',
  '$dynamicAnchor',
  '$vocabulary',
  '$comment',
  // Validation
  'type',
  'const',
  'enum',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  // Meta-data, format, content
  'title',
  'description',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
  'format',
  'contentEncoding',
  'contentMediaType',
  // OpenAPI 3.1
  'discriminator',
  'xml',
  'externalDocs',
  'example',
]);

/**
 * An OpenAPI discriminator names, for each value of its property, the component that value
 * selects. The mapping is read off the alternatives themselves: each `oneOf` member fixes the
 * property with a `const` and was lifted into a component reference.
 */
function withMapping(schema: JsonSchema, lifted: JsonSchema): JsonSchema {
  const discriminator = schema.discriminator as JsonSchema;
  const property = String(discriminator.propertyName);
  const alternatives = (schema.oneOf ?? []) as JsonSchema[];
  const references = (lifted.oneOf ?? []) as JsonSchema[];
  const mapping = Object.fromEntries(
    alternatives.map((alternative, index) => {
      const properties = (alternative.properties ?? {}) as Record<string, JsonSchema>;
      const value = properties[property]?.const;
      const reference = references[index]?.$ref;
      if (typeof value !== 'string' || typeof reference !== 'string')
        throw new Error(
          `Every oneOf member of a discriminator on "${property}" must be a named schema fixing it`,
        );
      return [value, reference];
    }),
  );
  return { ...discriminator, mapping };
}

/** OpenAPI component names are limited to `[A-Za-z0-9._-]`. */
function componentName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_');
}
