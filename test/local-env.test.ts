import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOCAL_ONLY_ENV_KEYS } from "../local/dynamo.js";
import { knownEnvKeys, readEnvVarsFile } from "../local/env-vars.js";
import { ConfigSchema } from "../shared/config.js";

/** `NAME=value` lines of .env.example, commented out or not. */
function exampleVariables(): Array<[string, string]> {
  const text = readFileSync(new URL("../.env.example", import.meta.url), "utf8");
  return [...text.matchAll(/^#?\s?([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1] as string, m[2] as string]);
}

describe(".env.example", () => {
  it("lists exactly the variables of shared/config.ts's ConfigSchema and the local-only ones, once each", () => {
    const names = exampleVariables().map(([name]) => name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...Object.keys(ConfigSchema.shape), ...LOCAL_ONLY_ENV_KEYS].sort());
  });

  it("shows values the schema accepts, and the schema's own default where it has one", () => {
    const shape = ConfigSchema.shape as Record<
      string,
      { safeParse(value: unknown): { success: boolean; data?: unknown } }
    >;
    for (const [name, value] of exampleVariables()) {
      const schema = shape[name];
      if (!schema) continue; // local-only
      const parsed = schema.safeParse(value);
      expect(parsed.success, `${name}=${value}`).toBe(true);
      const fallback = schema.safeParse(undefined);
      if (fallback.success && fallback.data !== undefined) expect(parsed.data, name).toEqual(fallback.data);
    }
  });
});

describe("--env-vars files", () => {
  const dir = mkdtempSync(join(tmpdir(), "boundloop-env-"));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("reads flat JSON, turning numbers and booleans into strings", async () => {
    const path = write("flat.json", JSON.stringify({ MAX_CYCLES: 3, TABLE_NAME: "t1" }));
    expect(await readEnvVarsFile(path)).toEqual({ vars: { MAX_CYCLES: "3", TABLE_NAME: "t1" }, unknown: [] });
  });

  it("reads SAM's shape: the function's entry wins over Parameters, other functions are ignored", async () => {
    const path = write(
      "sam.json",
      JSON.stringify({
        Parameters: { MAX_CYCLES: "4", OPENAI_MODEL: "m1" },
        ApiFunction1A2B3C4D: { MAX_CYCLES: "2" },
        OtherFunction: { TABLE_NAME: "elsewhere" },
      }),
    );
    expect((await readEnvVarsFile(path)).vars).toEqual({ MAX_CYCLES: "2", OPENAI_MODEL: "m1" });
  });

  it("reads a dotenv file and names variables boundloop does not read", async () => {
    const path = write(
      ".env",
      "# comment\nRUN_TIMEOUT_MS=9000\nBOUNDLOOP_DYNAMO_BACKEND=dynalite\nTYPO_VAR=1\n",
    );
    expect(await readEnvVarsFile(path)).toEqual({
      vars: { RUN_TIMEOUT_MS: "9000", BOUNDLOOP_DYNAMO_BACKEND: "dynalite", TYPO_VAR: "1" },
      unknown: ["TYPO_VAR"],
    });
    expect(knownEnvKeys()).toContain("BOUNDLOOP_DYNAMO_BACKEND");
  });

  it("rejects JSON of another shape, naming the file", async () => {
    const nested = write("nested.json", JSON.stringify({ SomethingElse: { A: "1" } }));
    await expect(readEnvVarsFile(nested)).rejects.toThrow(/nested\.json: expected flat variables/);
    const array = write("array.json", "[1]");
    await expect(readEnvVarsFile(array)).rejects.toThrow(/array\.json must hold a JSON object/);
  });
});
