import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { policyIssuesSync, policySchemaText } from "../shared/policies/check.js";

const doc = readFileSync(new URL("../docs/policies.md", import.meta.url), "utf8");

describe("docs/policies.md", () => {
  it("quotes the schema generated from the registry, as it is", () => {
    const block = doc.split("### The generated schema")[1]?.match(/```cedar\n([\s\S]*?)\n```/)?.[1];
    expect(block).toBe(policySchemaText().trimEnd());
  });

  it("every Cedar example validates against that schema, and so does examples/policies.cedar", () => {
    const examples = [...doc.matchAll(/```cedar\n([\s\S]*?)\n```/g)].map((m) => m[1] as string).slice(1);
    expect(examples.length).toBeGreaterThanOrEqual(5);
    for (const example of examples) expect(policyIssuesSync(example), example).toEqual([]);
    const file = readFileSync(new URL("../examples/policies.cedar", import.meta.url), "utf8");
    expect(policyIssuesSync(file)).toEqual([]);
  });
});
