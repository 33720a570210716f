/**
 * The policy vocabulary (docs/policies.md) as a Cedar schema, generated from the tool registry so it is
 * never written twice: one action per tool, `User` principals, `Tenant` resources, and each action's
 * context from the tool's own declarations:
 * - `input`: the tool's input schema (zod's output JSON Schema), optional fields as optional attributes;
 *   numbers that are not integers (amounts) stay decimal strings
 * - `facts`: the tool's {@link ToolFacts} schema (what the backend vouches for)
 * - `totals`: for a metered tool, the running totals of its calls in the call's currency
 * The same module turns a call's values into the context the schema describes ({@link contextValue}).
 */
import * as z from "zod";
import type { ToolRegistry } from "../agent/dispatcher.js";
import type { ToolDefinition } from "../agent/tool.js";

/** A Cedar type in the schema's JSON form. */
export type CedarType =
  | { type: "String" }
  | { type: "Long" }
  | { type: "Boolean" }
  | { type: "Set"; element: CedarType }
  | { type: "Record"; attributes: Record<string, CedarType & { required?: boolean }> };

/** The windows of `context.totals` (UTC day and hour; user and tenant). */
export const TOTAL_WINDOWS = ["userDay", "tenantDay", "userHour", "tenantHour"] as const;

/** One running total: calls counted and their gross in minor units (including in-flight calls). */
const TOTAL: CedarType = {
  type: "Record",
  attributes: { count: { type: "Long" }, grossMinor: { type: "Long" } },
};

/** A JSON Schema node as zod writes it (the parts read here). */
interface JsonSchemaNode {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  enum?: unknown[];
  const?: unknown;
}

/**
 * The Cedar type of a JSON Schema node: integer → Long, boolean → Boolean, object → Record, array → Set,
 * else String. A null alternative is left out (`anyOf` with `{type: "null"}`, or "null" in a type list):
 * Cedar has no null, and a null is never in the context ({@link contextValue} leaves it absent), so an
 * optional `limit` that is also nullable stays an optional Long.
 */
export function cedarTypeOf(node: JsonSchemaNode): CedarType {
  const types = (Array.isArray(node.type) ? node.type : node.type ? [node.type] : []).filter(
    (t) => t !== "null",
  );
  if (node.anyOf) {
    const branches = node.anyOf.filter((branch) => branch.type !== "null").map(cedarTypeOf);
    const first = JSON.stringify(branches[0]);
    return branches.every((b) => JSON.stringify(b) === first) && branches[0]
      ? branches[0]
      : { type: "String" };
  }
  if (types.length === 1 && types[0] === "integer") return { type: "Long" };
  if (types.length === 1 && types[0] === "boolean") return { type: "Boolean" };
  if (types.length === 1 && types[0] === "array") {
    return { type: "Set", element: node.items ? cedarTypeOf(node.items) : { type: "String" } };
  }
  if (types.length === 1 && types[0] === "object") {
    const required = new Set(node.required ?? []);
    return {
      type: "Record",
      attributes: Object.fromEntries(
        Object.entries(node.properties ?? {}).map(([name, child]) => [
          name,
          { ...cedarTypeOf(child), ...(required.has(name) ? {} : { required: false }) },
        ]),
      ),
    };
  }
  return { type: "String" };
}

/** The Cedar record type of a zod object's output (what the tool receives after validation). */
export function recordTypeOf(schema: z.ZodObject): CedarType {
  return cedarTypeOf(z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as JsonSchemaNode);
}

/** The context type of a tool's action: input, facts and, for a metered tool, totals. */
export function contextTypeOf(tool: ToolDefinition): CedarType {
  const attributes: Record<string, CedarType> = {
    input: recordTypeOf(tool.inputSchema),
    facts: tool.facts ? recordTypeOf(tool.facts.schema) : { type: "Record", attributes: {} },
  };
  if (tool.facts?.metered) {
    attributes.totals = {
      type: "Record",
      attributes: Object.fromEntries(TOTAL_WINDOWS.map((window) => [window, TOTAL])),
    };
  }
  return { type: "Record", attributes };
}

/** The generated Cedar schema (JSON form, empty namespace) of a registry. */
export function policySchemaOf(registry: ToolRegistry): object {
  const tools = [...registry.values()];
  return {
    "": {
      entityTypes: {
        User: {
          shape: {
            type: "Record",
            attributes: {
              tenant: { type: "String" },
              permissions: { type: "Set", element: { type: "String" } },
            },
          },
        },
        Tenant: {},
      },
      actions: Object.fromEntries(
        tools.map((tool) => [
          tool.name,
          {
            appliesTo: {
              principalTypes: ["User"],
              resourceTypes: ["Tenant"],
              context: contextTypeOf(tool),
            },
          },
        ]),
      ),
    },
  };
}

/**
 * A value shaped as `type` says: integers stay numbers for a Long, any other number becomes its decimal
 * string for a String, records keep only the schema's attributes (a missing optional one stays absent),
 * sets become arrays.
 */
export function contextValue(value: unknown, type: CedarType): unknown {
  switch (type.type) {
    case "Long":
      return value;
    case "Boolean":
      return value;
    case "String":
      return typeof value === "string"
        ? value
        : typeof value === "number"
          ? String(value)
          : JSON.stringify(value);
    case "Set":
      return Array.isArray(value) ? value.map((item) => contextValue(item, type.element)) : [];
    case "Record": {
      const record = (value ?? {}) as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(type.attributes)
          .filter(([name]) => record[name] !== undefined && record[name] !== null)
          .map(([name, child]) => [name, contextValue(record[name], child)]),
      );
    }
  }
}
