import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IntervalLog } from "../bench/clock.js";
import { LOOP_PROMPT, loopScript } from "../bench/loop-child.js";
import { createScenarioRunner } from "../bench/scenario/index.js";
import { instantTools } from "../bench/scenario/tools.js";
import type { Framework, Reference } from "../bench/scenario/types.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";

let model: LocalModelServer;
beforeAll(async () => {
  model = await startModelServer({ script: [] });
});
afterAll(() => model.stop());

/** The tools each request of one P1 run of `framework` described, by name: their parameters. */
async function toolParameters(framework: Framework | Reference) {
  const runner = await createScenarioRunner(framework, {
    baseURL: model.baseURL,
    model: "bench-scripted",
    tools: instantTools(new IntervalLog()),
    maxCycles: 5,
  });
  model.requests.length = 0;
  model.script(loopScript());
  expect(await runner.run(LOOP_PROMPT)).toBe("Done.");
  return model.requests.map((request) => {
    const tools = request.tools as Array<{ function: { name: string; parameters: unknown } }>;
    return Object.fromEntries(tools.map((tool) => [tool.function.name, tool.function.parameters]));
  });
}

describe("P1's floor (bench/scenario)", () => {
  it("the bare-fetch floor and the SDK-alone reference describe the tools as the AI SDK does", async () => {
    const peer = await toolParameters("ai-sdk");
    expect(peer).toHaveLength(3);
    expect(peer[0]?.convertAmount).toMatchObject({ required: ["amount", "from", "to"] });
    expect(await toolParameters("bare-fetch")).toEqual(peer);
    expect(await toolParameters("openai-sdk")).toEqual(peer);
  });
});
