/**
 * docs/quotas.md "Per-tenant overrides" as a reader copies it: the first `PUT /v1/limits` body and the
 * `npm run tenant` examples without a cost limit are stored by a deploy without MODEL_PRICES (a default
 * `npm run dev`); the cost examples are refused there (400, nothing stored) and stored once the model
 * has the price the page shows. The real handler on DynamoDB Local.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventForRoute } from "../local/durable-runner.js";
import { parseLimitsCommand } from "../local/tenant.js";
import { json } from "./support/approvals.js";
import { runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const page = readFileSync(new URL("../docs/quotas.md", import.meta.url), "utf8");
const section = page.slice(page.indexOf("### Per-tenant overrides"), page.indexOf("## Admission"));
/** The section's fenced blocks of one language, in order. */
const blocks = (lang: string) =>
  [...section.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => m[1] as string);
/** The `npm run tenant -- …` lines of the section's shell blocks: their arguments and their comment. */
const tenantLines = blocks("sh")
  .flatMap((block) => block.split("\n"))
  .filter((line) => line.startsWith("npm run tenant -- "))
  .map((line) => {
    const [command = "", comment = ""] = line.split(/\s+#\s*/);
    return { args: command.replace("npm run tenant -- ", "").trim().split(/\s+/), comment };
  });

/** The MODEL_PRICES the section shows how to set, if it does. */
const shownPrices = blocks("sh")
  .join("\n")
  .match(/MODEL_PRICES='([^']+)'/)?.[1];

let plain: TestStack;
let priced: TestStack;
beforeAll(async () => {
  plain = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
  priced = await startTestStack({ MODEL_PRICES: shownPrices ?? "{}", POWERTOOLS_LOG_LEVEL: "SILENT" });
});
afterAll(async () => {
  await plain?.stop();
  await priced?.stop();
});

/** `PUT /v1/limits` with `body` as a limits:admin of `tenantId`: the status. */
async function put(stack: TestStack, tenantId: string, body: unknown): Promise<number> {
  const event = eventForRoute(runEvent({ tenantId, scope: "limits:admin" }), "PUT", "/v1/limits");
  event.headers = { ...event.headers, "content-type": "application/json" };
  event.body = JSON.stringify(body);
  const response = await stack.invoke(event);
  if (response.statusCode !== 200) expect(json(response)).toMatchObject({ code: "INVALID_REQUEST" });
  return response.statusCode ?? 0;
}

describe("docs/quotas.md per-tenant overrides, as copied", () => {
  it("the first PUT /v1/limits body works on a deploy without MODEL_PRICES; the cost body needs the price shown", async () => {
    const [first] = blocks("json");
    expect(await put(plain, "tenant_docs_1", JSON.parse(first ?? "null"))).toBe(200);
    expect(shownPrices, "the section shows how to set MODEL_PRICES").toBeDefined();
    const cost = section.match(/then `(\{[^`]*costPerDay[^`]*\})` is stored/)?.[1];
    expect(cost).toBeDefined();
    expect(await put(plain, "tenant_docs_1", JSON.parse(cost ?? "null"))).toBe(400);
    expect(await put(priced, "tenant_docs_1", JSON.parse(cost ?? "null"))).toBe(200);
  });

  it("says how the npm run tenant examples reach npm run dev's table: --endpoint, else the deployed stack", () => {
    expect(section).toMatch(/for\s+`npm run dev`'s table add `--endpoint`[^)]*the deployed stack/);
    for (const { args } of tenantLines) {
      expect(parseLimitsCommand(args, {}).target).toEqual({ stackName: "Boundloop", table: undefined });
      const local = [...args, "--endpoint", "http://127.0.0.1:35203"];
      expect(parseLimitsCommand(local, {}).target).toEqual({
        endpoint: "http://127.0.0.1:35203",
        table: "boundloop",
      });
    }
  });

  it("the npm run tenant examples set no cost limit, but the one that says it needs MODEL_PRICES", async () => {
    expect(tenantLines.length).toBeGreaterThan(2);
    for (const { args, comment } of tenantLines) {
      const command = parseLimitsCommand(args, { DYNAMODB_ENDPOINT: "http://127.0.0.1:1" });
      if (command.change === "show") continue;
      const { tenant, user } = command.change;
      const sets = [tenant?.costPerDay, user?.costPerDay].some((cost) => cost !== undefined && cost !== null);
      if (sets) expect(comment).toMatch(/MODEL_PRICES/);
      expect(await put(plain, "tenant_docs_2", command.change), args.join(" ")).toBe(sets ? 400 : 200);
      if (sets) expect(await put(priced, "tenant_docs_2", command.change)).toBe(200);
    }
  });
});
