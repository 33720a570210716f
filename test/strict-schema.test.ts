import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRegistry } from "../shared/agent/dispatcher.js";
import { modelTool } from "../shared/agent/model-step.js";
import { toStrictToolSchema } from "../shared/agent/strict-schema.js";
import {
  defineTool,
  strictSchemaOf,
  type ToolDefinition,
  ToolDefinitionError,
} from "../shared/agent/tool.js";
import { mcpToolOf } from "../shared/mcp/server.js";
import { toOpenAITool } from "../shared/model/openai-chat.js";
import { LedgerStore } from "../shared/store/ledger.js";
import { QuoteStore } from "../shared/store/quotes.js";
import { CalculateTaxInput, calculateTaxTool } from "../shared/tools/calculate-tax.js";
import { accountingTools } from "../shared/tools/registry.js";

const declare = (inputSchema: z.ZodObject) =>
  defineTool({
    name: "t",
    description: "A tool.",
    inputSchema,
    isMutating: false,
    requiredPermission: undefined,
    handler: async () => ({}),
  });

/** The real registry; the stores are never used (only the schemas are read), the clock fixes the rules-in-force text. */
const realTools = () =>
  accountingTools({
    ledger: new LedgerStore({} as never, "unused"),
    quotes: new QuoteStore({} as never, "unused"),
    quoteTtlSeconds: 900,
    clock: () => new Date("2026-11-30T12:00:00Z"),
  });

type JsonNode = { type?: unknown; anyOf?: JsonNode[]; oneOf?: JsonNode[] } | undefined;

/** Whether a JSON Schema node admits null: `type: "null"`, a type list with it, or such a union variant. */
const acceptsNull = (node: JsonNode): boolean =>
  node !== undefined &&
  (node.type === "null" ||
    (Array.isArray(node.type) && node.type.includes("null")) ||
    [...(node.anyOf ?? []), ...(node.oneOf ?? [])].some(acceptsNull));

describe("strict schemas at registration", () => {
  it("the real tools' generated strict schemas (snapshot)", () => {
    const tools = realTools().values();
    for (const tool of tools) {
      expect(toOpenAITool(modelTool(tool))).toMatchSnapshot(tool.name);
      // Every object in it is closed and lists every property as required.
      const parameters = toOpenAITool(modelTool(tool)).function.parameters as {
        properties: Record<string, unknown>;
        required: string[];
        additionalProperties: boolean;
      };
      expect(parameters.additionalProperties).toBe(false);
      expect(parameters.required).toEqual(Object.keys(parameters.properties));
    }
  });

  it("calculateTax's taxPointDate accepts null (today) in its zod schema, the model's strict schema and MCP's inputSchema alike", () => {
    const tool = calculateTaxTool({ quotes: new QuoteStore({} as never, "unused"), quoteTtlSeconds: 900 });
    const args = { amount: "100.00", currency: "GBP", jurisdiction: "GB", taxPointDate: null };
    expect(CalculateTaxInput.safeParse(args).success).toBe(true);
    const date = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" };
    const mcp = mcpToolOf(tool as never).inputSchema.properties?.taxPointDate as Record<string, unknown>;
    expect(mcp.anyOf).toEqual([date, { type: "null" }]);
    expect(mcp.description).toMatch(/null means today/);
    const strict = toStrictToolSchema(tool.inputSchema).parameters as {
      properties: Record<string, { anyOf?: unknown }>;
    };
    expect(strict.properties.taxPointDate?.anyOf).toEqual([date, { type: "null" }]);
  });

  it("every argument of every tool: null accepted by its zod schema ⇔ nullable in MCP's inputSchema ⇔ nullable in the strict schema; a description saying null means it is", () => {
    const tools = [...realTools().values()];
    expect(tools.map((tool) => tool.name)).toEqual([
      "calculateTax",
      "recordInvoice",
      "getInvoice",
      "listInvoices",
    ]);
    const checked: string[] = [];
    for (const tool of tools) {
      const mcp = mcpToolOf(tool).inputSchema.properties as Record<string, JsonNode>;
      const strict = (
        toStrictToolSchema(tool.inputSchema).parameters as { properties: Record<string, JsonNode> }
      ).properties;
      for (const [name, field] of Object.entries(tool.inputSchema.shape as Record<string, z.ZodType>)) {
        const zodAcceptsNull = field.safeParse(null).success;
        const seen = {
          argument: `${tool.name}.${name}`,
          mcp: acceptsNull(mcp[name]),
          strict: acceptsNull(strict[name]),
          description: /\bnull\b/.test(field.description ?? ""),
        };
        expect(seen).toEqual({
          argument: seen.argument,
          mcp: zodAcceptsNull,
          strict: zodAcceptsNull,
          description: seen.description && zodAcceptsNull,
        });
        checked.push(seen.argument);
      }
    }
    // The loop ran over every argument (a tool without arguments would add none).
    expect(checked).toContain("recordInvoice.clientReference");
    expect(checked).toContain("listInvoices.limit");
  });

  it("a null sent for an optional argument parses as the argument left out, so both are one operation", () => {
    for (const tool of realTools().values()) {
      const optional = Object.entries(tool.inputSchema.shape as Record<string, z.ZodType>)
        .filter(([, field]) => field.safeParse(undefined).success)
        .map(([name]) => name);
      const nulls = Object.fromEntries(optional.map((name) => [name, null]));
      expect(strictSchemaOf(tool).stripNulls({ ...nulls, kept: 1 }), tool.name).toEqual({ kept: 1 });
    }
    const record = [...realTools().values()].find((tool) => tool.name === "recordInvoice");
    const quoteId = `qt_${"a".repeat(32)}`;
    const parse = (args: object) => record?.inputSchema.parse(strictSchemaOf(record).stripNulls(args));
    expect(parse({ clientName: "Acme", quoteId, clientReference: null, description: null })).toEqual({
      clientName: "Acme",
      quoteId,
    });
  });

  it("optional fields become required and nullable, at every depth; .nullable().optional() stays nullable", () => {
    const strict = toStrictToolSchema(
      z
        .object({
          name: z.string(),
          note: z.string().max(5).optional().describe("A short note."),
          address: z
            .object({ line: z.string(), extra: z.string().nullable().optional() })
            .strict()
            .optional(),
          lines: z.array(z.object({ sku: z.string(), discount: z.number().optional() }).strict()),
        })
        .strict(),
    );
    expect(strict.parameters).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      additionalProperties: false,
      required: ["name", "note", "address", "lines"],
      properties: {
        name: { type: "string" },
        note: { description: "A short note.", anyOf: [{ type: "string", maxLength: 5 }, { type: "null" }] },
        address: {
          anyOf: [
            {
              type: "object",
              additionalProperties: false,
              required: ["line", "extra"],
              properties: { line: { type: "string" }, extra: { type: ["string", "null"] } },
            },
            { type: "null" },
          ],
        },
        lines: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["sku", "discount"],
            properties: {
              sku: { type: "string" },
              discount: { anyOf: [{ type: "number" }, { type: "null" }] },
            },
          },
        },
      },
    });
    // Nulls of optional fields are stripped (at every depth), of a nullable one too (null means left out).
    expect(
      strict.stripNulls({
        name: "n",
        note: null,
        address: { line: "l", extra: null },
        lines: [
          { sku: "a", discount: null },
          { sku: "b", discount: 5 },
        ],
      }),
    ).toEqual({
      name: "n",
      address: { line: "l" },
      lines: [{ sku: "a" }, { sku: "b", discount: 5 }],
    });
    expect(strict.stripNulls({ name: "n", note: null, address: null, lines: [] })).toEqual({
      name: "n",
      lines: [],
    });
    // A null for a required field is left for zod to reject.
    expect(strict.stripNulls({ name: null })).toEqual({ name: null });
  });

  it("rejects a root union, with how to fix it", () => {
    const union = z.union([z.object({ a: z.string() }).strict(), z.object({ b: z.string() }).strict()]);
    expect(() => declare(union as unknown as z.ZodObject)).toThrow(ToolDefinitionError);
    expect(() => declare(union as unknown as z.ZodObject)).toThrow(
      /Tool "t": .*The root is a union\. .*use a single z\.object\(\{\.\.\.\}\)\.strict\(\) with a discriminator field/,
    );
  });

  it("rejects an open object (not .strict()), at any depth, naming it", () => {
    expect(() => declare(z.object({ a: z.string() }))).toThrow(
      /The object at "\(root\)" is open.*Call \.strict\(\)/,
    );
    expect(() => declare(z.object({ items: z.array(z.object({ b: z.string() })) }).strict())).toThrow(
      /The object at "items\[\]" is open/,
    );
    expect(() => declare(z.object({ tags: z.record(z.string(), z.string()) }).strict())).toThrow(
      /The object at "tags" is open.*instead of z\.record\(\)/,
    );
  });

  it("rejects defaults, with how to fix them", () => {
    expect(() => declare(z.object({ currency: z.string().default("GBP") }).strict())).toThrow(
      /The field "currency" has a default.*make the field \.optional\(\).*apply the default in the handler/,
    );
  });

  it("rejects what JSON Schema cannot express", () => {
    expect(() => declare(z.object({ when: z.date() }).strict())).toThrow(/zod cannot express the schema/);
  });

  it("createRegistry checks tools that were not declared with defineTool", () => {
    const raw = {
      name: "raw",
      description: "Skipped defineTool.",
      inputSchema: z.object({ a: z.string() }),
      isMutating: false,
      requiredPermission: undefined,
      handler: async () => ({}),
    } as unknown as ToolDefinition;
    expect(() => createRegistry([raw])).toThrow(/Tool "raw": .*is open/);
  });

  it("rejects a timeoutMs that is not a positive integer", () => {
    expect(() =>
      defineTool({
        name: "t",
        description: "A tool.",
        inputSchema: z.object({}).strict(),
        isMutating: false,
        requiredPermission: undefined,
        timeoutMs: 0,
        handler: async () => ({}),
      }),
    ).toThrow(/timeoutMs must be a positive integer/);
  });
});
