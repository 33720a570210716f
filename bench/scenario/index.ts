import type { Framework, Reference, ScenarioOptions, ScenarioRunner } from "./types.js";

/**
 * Loads one framework's runner module (dynamically, so a process measuring one framework loads only
 * that framework's code) and sets it up.
 */
export async function createScenarioRunner(
  framework: Framework | Reference,
  options: ScenarioOptions,
): Promise<ScenarioRunner> {
  switch (framework) {
    case "boundloop":
      return (await import("./boundloop.js")).createRunner(options);
    case "openai-agents":
      return (await import("./openai-agents.js")).createRunner(options);
    case "ai-sdk":
      return (await import("./ai-sdk.js")).createRunner(options);
    case "bare-fetch":
      return (await import("./bare-fetch.js")).createRunner(options);
    case "openai-sdk":
      return (await import("./openai-sdk.js")).createRunner(options);
  }
}
