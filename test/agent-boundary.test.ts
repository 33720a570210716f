/**
 * The agent layer speaks only the model port (shared/agent/model.ts): no module in shared/agent imports
 * the openai SDK. The one exception is the strict JSON Schema transform (`openai/lib/transform`, a pure
 * function behind `openai/helpers/zod`) that shared/agent/strict-schema.ts applies to tool schemas at
 * registration; the SDK client and its types live in shared/model/ and shared/model-client.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const AGENT_DIR = new URL("../shared/agent/", import.meta.url);

describe("the agent layer's dependencies", () => {
  it("no module in shared/agent imports openai (except strict-schema's schema transform)", () => {
    const files = readdirSync(AGENT_DIR).filter((name) => name.endsWith(".ts"));
    expect(files).toContain("loop.ts");
    const imports = files.flatMap((name) =>
      [...readFileSync(new URL(name, AGENT_DIR), "utf8").matchAll(/from\s+"(openai[^"]*)"/g)].map(
        (match) => `${name}: ${match[1]}`,
      ),
    );
    expect(imports).toEqual(["strict-schema.ts: openai/lib/transform"]);
  });
});
