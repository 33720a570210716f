import { toStrictJsonSchema as openAIStrict } from "openai/lib/transform";
import * as z from "zod";

/** A JSON Schema node as zod emits it (draft-07). */
type JsonSchema = Record<string, unknown>;

/** Raised when a zod schema is outside OpenAI's strict subset; the message says how to fix it. */
export class StrictSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * A tool's input schema in the two forms the loop needs:
 * - `parameters`: the OpenAI strict JSON Schema sent as the function's `parameters` (`strict: true`).
 *   Every property is required; a field that is `.optional()` in zod is required and nullable here.
 * - `stripNulls(args)`: returns a copy of parsed JSON arguments without the `null`s sent for optional
 *   fields (the strict schema makes the model send them), so zod sees those fields as absent. That holds
 *   for an optional field declared `.nullable()` too: the model cannot tell null from absent there, so
 *   neither does the tool, and a null and a left-out field are one operation (one idempotency key). A
 *   required field's null is left for zod.
 */
export interface StrictToolSchema {
  parameters: Record<string, unknown>;
  stripNulls(args: unknown): unknown;
}

/**
 * Converts a tool's zod schema to an OpenAI strict JSON Schema with the libraries, not a converter of our
 * own: zod's `z.toJSONSchema` (draft-07, `io: "input"`, i.e. what the model must send) emits the schema,
 * optional properties are made nullable (the only rewrite done here), and openai's `toStrictJsonSchema`
 * (the transform behind `openai/helpers/zod`) makes every property required and checks the result.
 * Source of the rules: OpenAI Structured Outputs, "Supported schemas" (all fields required, optional
 * fields emulated with a union with null; `additionalProperties: false` on every object).
 * @throws StrictSchemaError, naming the field and the fix, when the schema is outside the strict subset:
 *   a root that is not one object (e.g. a union), an open object (not `.strict()`, or a record), a
 *   default (`.default()` / `.prefault()`), or a type JSON Schema cannot express (e.g. a transform output,
 *   a date, a bigint)
 */
export function toStrictToolSchema(schema: z.ZodType): StrictToolSchema {
  let input: JsonSchema;
  try {
    input = z.toJSONSchema(schema, {
      target: "draft-07",
      io: "input",
      unrepresentable: "throw",
    }) as JsonSchema;
  } catch (error) {
    throw new StrictSchemaError(
      `zod cannot express the schema as JSON Schema (${(error as Error).message}). Use plain zod types ` +
        "(string, number, boolean, enum, literal, object, array, union, nullable, optional).",
    );
  }
  assertStrictSubset(input);
  let parameters: Record<string, unknown>;
  try {
    parameters = openAIStrict(withNullableOptionals(structuredClone(input)) as never) as Record<
      string,
      unknown
    >;
  } catch (error) {
    throw new StrictSchemaError(`openai's strict transform rejected the schema: ${(error as Error).message}`);
  }
  return { parameters, stripNulls: (args) => stripOptionalNulls(input, args, input) };
}

/** Checks the strict subset on zod's JSON Schema, so the check sees exactly what the model would get. */
function assertStrictSubset(root: JsonSchema): void {
  if (root.type !== "object") {
    const union = Array.isArray(root.anyOf) || Array.isArray(root.oneOf);
    throw new StrictSchemaError(
      union
        ? "The root is a union. OpenAI strict tools need one object at the root: use a single " +
            'z.object({...}).strict() with a discriminator field (e.g. kind: z.enum(["a", "b"])) and the ' +
            "variant fields optional, or declare one tool per variant."
        : `The root is ${String(root.type ?? "not an object")}. Wrap the arguments in z.object({...}).strict().`,
    );
  }
  visit(root, "", (node, path) => {
    if ("default" in node) {
      throw new StrictSchemaError(
        `The field "${path || "(root)"}" has a default (.default() or .prefault()); strict schemas cannot ` +
          "express defaults. Remove it, make the field .optional() (the model then sends null, which is " +
          "stripped before parsing) and apply the default in the handler.",
      );
    }
    if (isObjectNode(node) && node.additionalProperties !== false) {
      throw new StrictSchemaError(
        `The object at "${path || "(root)"}" is open (it accepts unknown keys). Call .strict() on it ` +
          "(z.object({...}).strict()); for a map, use an array of { key, value } objects instead of z.record().",
      );
    }
  });
}

/** Calls `fn` on every schema node with its data path ("customer.lines[].amount"). */
function visit(node: JsonSchema, path: string, fn: (node: JsonSchema, path: string) => void): void {
  fn(node, path);
  const child = (value: unknown, childPath: string) => {
    if (isRecord(value)) visit(value, childPath, fn);
  };
  if (isRecord(node.properties)) {
    for (const [key, value] of Object.entries(node.properties)) child(value, path ? `${path}.${key}` : key);
  }
  if (Array.isArray(node.items)) for (const item of node.items) child(item, `${path}[]`);
  else child(node.items, `${path}[]`);
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const variants = node[key];
    if (Array.isArray(variants)) for (const variant of variants) child(variant, path);
  }
  for (const key of ["$defs", "definitions"]) {
    const defs = node[key];
    if (isRecord(defs)) for (const [name, def] of Object.entries(defs)) child(def, `#${name}`);
  }
}

/**
 * Makes every optional property required and nullable: `anyOf: [schema, {type: "null"}]` (description
 * kept outside), or unchanged when it already accepts null (`.nullable().optional()`).
 */
function withNullableOptionals(root: JsonSchema): JsonSchema {
  visit(root, "", (node) => {
    if (!isRecord(node.properties)) return;
    const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
    for (const [key, value] of Object.entries(node.properties)) {
      if (required.has(key) || !isRecord(value) || isNullable(value)) continue;
      const { description, ...rest } = value;
      node.properties[key] = {
        ...(description === undefined ? {} : { description }),
        anyOf: [rest, { type: "null" }],
      };
    }
    node.required = Object.keys(node.properties);
  });
  return root;
}

/**
 * Copies `value` without the nulls sent for optional properties (nullable or not), following the zod JSON
 * Schema (`properties`, `items`, local `$ref`s, and a union with exactly one object variant).
 */
function stripOptionalNulls(schema: JsonSchema, value: unknown, root: JsonSchema): unknown {
  const resolved = resolveRef(schema, root);
  if (Array.isArray(value)) {
    const items = resolved.items;
    return isRecord(items) ? value.map((item) => stripOptionalNulls(items, item, root)) : value;
  }
  if (!isRecord(value)) return value;
  if (!isRecord(resolved.properties)) {
    const objects = ((resolved.anyOf ?? resolved.oneOf ?? []) as unknown[])
      .filter(isRecord)
      .map((variant) => resolveRef(variant, root))
      .filter(isObjectNode);
    return objects.length === 1 && objects[0] ? stripOptionalNulls(objects[0], value, root) : value;
  }
  const properties = resolved.properties;
  // Looked up only for a null (a Set per object and call cost more than the few lookups).
  const required = Array.isArray(resolved.required) ? (resolved.required as string[]) : [];
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const property = properties[key];
    if (!isRecord(property)) {
      copy[key] = item;
      continue;
    }
    if (item === null && !required.includes(key)) continue;
    copy[key] = stripOptionalNulls(property, item, root);
  }
  return copy;
}

/** Follows a local `$ref` ("#/definitions/x", "#/$defs/x"); other nodes are returned as they are. */
function resolveRef(node: JsonSchema, root: JsonSchema): JsonSchema {
  const ref = node.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return node;
  let target: unknown = root;
  for (const part of ref.slice(2).split("/")) target = isRecord(target) ? target[part] : undefined;
  return isRecord(target) ? target : node;
}

/** True when the node accepts null (`type: "null"`, a type list with "null", or a union with such a variant). */
function isNullable(node: JsonSchema): boolean {
  if (node.type === "null" || (Array.isArray(node.type) && node.type.includes("null"))) return true;
  const variants = [...((node.anyOf as unknown[]) ?? []), ...((node.oneOf as unknown[]) ?? [])];
  return variants.some((variant) => isRecord(variant) && isNullable(variant));
}

function isObjectNode(node: JsonSchema): boolean {
  return node.type === "object" || isRecord(node.properties);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
