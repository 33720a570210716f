/**
 * docs/configuration.md, the reference of every environment variable, is what `npm run docs:config`
 * renders from the config schema (shared/config.ts) and its prose (shared/config-docs.ts).
 */
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import {
  CONFIG_REFERENCE_COMMAND,
  CONFIG_REFERENCE_PATH,
  configReferenceFile,
  describeAccepted,
  describeDefault,
  renderConfigReference,
} from "../local/gen-config-docs.js";
import { ConfigSchema } from "../shared/config.js";
import { CONFIG_DOCS } from "../shared/config-docs.js";
import { read, tableRows } from "./support/markdown.js";

describe("configuration reference", () => {
  it(`${CONFIG_REFERENCE_PATH} is what \`${CONFIG_REFERENCE_COMMAND}\` generates from the config schema`, () => {
    const committed = read(CONFIG_REFERENCE_PATH);
    expect(
      committed === configReferenceFile(),
      `${CONFIG_REFERENCE_PATH} is stale: run \`${CONFIG_REFERENCE_COMMAND}\` and commit the result`,
    ).toBe(true);
  });

  it("lists every variable of the schema once, with the default the schema applies", () => {
    const rows = tableRows(read(CONFIG_REFERENCE_PATH));
    const defaults = ConfigSchema.parse({});
    for (const name of Object.keys(ConfigSchema.shape)) {
      expect(
        rows.filter((row) => row[0] === `\`${name}\``),
        name,
      ).toHaveLength(1);
    }
    const row = (name: string) => rows.find((cells) => cells[0] === `\`${name}\``)?.slice(0, 3);
    expect(row("MAX_CYCLES")).toEqual([
      "`MAX_CYCLES`",
      "integer, 1–50 model calls",
      `${defaults.MAX_CYCLES} model calls`,
    ]);
    expect(row("TENANT_CLAIMS")).toEqual([
      "`TENANT_CLAIMS`",
      "list of string matching `^[A-Za-z0-9:_.-]{1,128}$`, at least 1",
      `\`${defaults.TENANT_CLAIMS.join(",")}\``,
    ]);
  });

  it("reads bounds, accepted values and defaults from the schema, not from the prose", () => {
    const schema = z.object({
      WAIT_MS: z._default(z.coerce.number().check(z.int(), z.positive(), z.maximum(90_000)), 30_000),
      RETENTION_SECONDS: z._default(
        z.coerce.number().check(z.int(), z.minimum(60), z.maximum(864_000)),
        172_800,
      ),
      MODE: z.pipe(
        z.pipe(
          z.optional(z.string()),
          z.transform((value) => value?.trim().toLowerCase() ?? "fast"),
        ),
        z.enum(["fast", "safe"]),
      ),
      ENDPOINT: z.optional(z.url()),
      NAMES: z.pipe(
        z.transform((value: string | undefined) => (value ?? "a,b").split(",")),
        z.array(z.string().check(z.regex(/^[a-z]+$/))).check(z.minLength(2)),
      ),
    });
    expect(describeAccepted(schema.shape.WAIT_MS, "ms")).toBe("integer, 1–90000 ms");
    expect(describeDefault(schema.shape.WAIT_MS, "ms")).toBe("30000 ms (30 s)");
    expect(describeAccepted(schema.shape.RETENTION_SECONDS, "s")).toBe("integer, 60–864000 s");
    expect(describeDefault(schema.shape.RETENTION_SECONDS, "s")).toBe("172800 s (2 days)");
    expect(describeAccepted(schema.shape.MODE)).toBe("one of `fast`, `safe`");
    expect(describeDefault(schema.shape.MODE)).toBe("`fast`");
    expect(describeAccepted(schema.shape.ENDPOINT)).toBe("URL");
    expect(describeDefault(schema.shape.ENDPOINT)).toBe("unset");
    expect(describeAccepted(schema.shape.NAMES)).toBe("list of string matching `^[a-z]+$`, at least 2");
    expect(describeDefault(schema.shape.NAMES)).toBe("`a,b`");
    expect(describeDefault(z.string())).toBe("required");
    // An empty list or text default (JWT_AUDIENCE, CONSOLE_ORIGINS) in words: "``" is no code span in
    // Markdown, and would show as two backticks.
    expect(
      describeDefault(z.transform((value: string | undefined) => (value ?? "").split(",").filter(Boolean))),
    ).toBe("none");
    expect(describeDefault(z._default(z.string(), ""))).toBe("empty");
    // A union of object shapes (JWT_JWKS: `{}` or `{"keys": [...]}`) is JSON, not "string".
    expect(describeAccepted(z.union([z.strictObject({}), z.object({ keys: z.array(z.string()) })]))).toBe(
      "JSON object",
    );

    const docs = {
      WAIT_MS: { group: "Limits of a run", unit: "ms", description: "How long | to wait." },
      RETENTION_SECONDS: { group: "Quotes, idempotency and audit", unit: "s", description: "Kept." },
      MODE: { group: "Model", description: "Mode." },
      ENDPOINT: { group: "DynamoDB", description: "Endpoint." },
      NAMES: { group: "HTTP and identity", description: "Names." },
    } as const;
    const rendered = renderConfigReference(schema, docs);
    expect(tableRows(rendered)).toContainEqual([
      "`WAIT_MS`",
      "integer, 1–90000 ms",
      "30000 ms (30 s)",
      "How long | to wait.",
    ]);
    expect(rendered).toContain("How long \\| to wait.");
    expect(rendered.indexOf("## Model")).toBeLessThan(rendered.indexOf("`MODE`"));
    expect(rendered.indexOf("`MODE`")).toBeLessThan(rendered.indexOf("## DynamoDB"));
    expect(rendered).not.toContain("## Observability");
    expect(() => renderConfigReference(schema, { ...docs, NAMES: undefined } as never)).toThrow(
      "No description in shared/config-docs.ts for NAMES",
    );
  });

  it("has prose for exactly the variables of the schema", () => {
    expect(Object.keys(CONFIG_DOCS).sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
  });
});
