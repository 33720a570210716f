import { describe, expect, it } from "vitest";
import { CONFIG_SECTIONS, ConfigSchema, loadConfig } from "../shared/config.js";
import { CONFIG_DOCS } from "../shared/config-docs.js";

describe("configuration sections (shared/config/)", () => {
  it("own disjoint variables, which together are the whole schema", () => {
    const owned = CONFIG_SECTIONS.flatMap((section) => Object.keys(section.fields));
    expect(new Set(owned).size).toBe(owned.length);
    expect(owned).toEqual(Object.keys(ConfigSchema.shape));
  });

  it("read only variables another section owns, with that section's schema", () => {
    const shape = ConfigSchema.shape as Record<string, unknown>;
    for (const section of CONFIG_SECTIONS) {
      const reads = ("reads" in section ? section.reads : {}) as Record<string, unknown>;
      for (const [name, schema] of Object.entries(reads)) {
        expect(Object.keys(section.fields), name).not.toContain(name);
        expect(shape[name], name).toBe(schema);
      }
    }
  });

  it("map an environment into the Config members, each section its own", () => {
    const config = loadConfig({
      MAX_CYCLES: "3",
      DEADLINE_RESERVE_MS: "2000",
      ASYNC_RUN_TIMEOUT_MS: "5000000",
    });
    expect(config.limits.maxCycles).toBe(3);
    // durable-runs reads DEADLINE_RESERVE_MS of run-limits: 900 s execution timeout - 2 s reserve.
    expect(config.durable.runTimeoutMs).toBe(898_000);
    expect(Object.keys(config).sort()).toEqual(
      [
        "approvals",
        "auth",
        "console",
        "durable",
        "grounding",
        "history",
        "http",
        "identity",
        "idempotency",
        "limits",
        "model",
        "observability",
        "policies",
        "prompts",
        "quotas",
        "quotes",
        "runs",
        "stream",
        "table",
        "tracing",
      ].sort(),
    );
  });

  it("report every broken rule between variables, in section order", () => {
    expect(() =>
      loadConfig({ OPENAI_API_KEY: "k", OPENAI_API_KEY_SECRET_NAME: "s", RUN_TTL_SECONDS: "3600" }),
    ).toThrow(
      "Invalid configuration: Set OPENAI_API_KEY (local) or OPENAI_API_KEY_SECRET_NAME (AWS), not both. RUN_TTL_SECONDS (3600 s) must exceed APPROVAL_TIMEOUT_SECONDS (86400 s)",
    );
  });

  it("refuse a MIN_COMPLETION_TOKENS above what a call may ever ask for, which would end every run before its first model call", () => {
    expect(() => loadConfig({ MIN_COMPLETION_TOKENS: "5000" })).toThrow(
      "Invalid configuration: MIN_COMPLETION_TOKENS (5000 tokens) must be at most MODEL_MAX_TOKENS (4096 tokens): every call's max_tokens is at most MODEL_MAX_TOKENS, so no model call would ever be made.",
    );
    expect(() =>
      loadConfig({ MIN_COMPLETION_TOKENS: "300", MODEL_MAX_TOKENS: "8192", MAX_TOTAL_TOKENS: "200" }),
    ).toThrow(
      "Invalid configuration: MIN_COMPLETION_TOKENS (300 tokens) must be at most MAX_TOTAL_TOKENS (200 tokens): every call's max_tokens is at most MAX_TOTAL_TOKENS, so no model call would ever be made.",
    );
    // At the bounds it holds: a call may ask for exactly MIN_COMPLETION_TOKENS.
    expect(loadConfig({ MIN_COMPLETION_TOKENS: "4096" }).quotas.minCompletionTokens).toBe(4096);
  });

  it("write the prose of each of their variables", () => {
    expect(Object.keys(CONFIG_DOCS).sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
  });
});
