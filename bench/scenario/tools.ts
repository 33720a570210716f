import { setTimeout as sleep } from "node:timers/promises";
import * as z from "zod";
import type { ScriptedReply } from "../../local/model-server.js";
import type { IntervalLog } from "../clock.js";
import type { ScenarioTool } from "./types.js";

/**
 * The P1/P5 tools: two instant lookups (no I/O), so a run's time is the frameworks' own work plus the
 * model server's. Each execution is timed into `log`.
 */
export function instantTools(log: IntervalLog): ScenarioTool[] {
  return [
    {
      name: "lookupRate",
      description: "The VAT rate for a jurisdiction (ISO 3166-1 alpha-2).",
      schema: z.object({ jurisdiction: z.string().regex(/^[A-Z]{2}$/) }).strict(),
      execute: (input) => log.time(async () => ({ jurisdiction: input.jurisdiction, rate: "0.20" })),
    },
    {
      name: "convertAmount",
      description: "Converts a decimal amount between two ISO 4217 currencies.",
      schema: z
        .object({
          amount: z.string().regex(/^\d+\.\d{2}$/),
          from: z.string().regex(/^[A-Z]{3}$/),
          to: z.string().regex(/^[A-Z]{3}$/),
        })
        .strict(),
      execute: (input) => log.time(async () => ({ amount: input.amount, currency: input.to, rate: "1.17" })),
    },
  ];
}

/** The P2 tools: three independent calls of `delayMs` each (a timer; aborted with the framework's signal). */
export function slowTools(log: IntervalLog, delayMs: number): ScenarioTool[] {
  return ["fetchLedger", "fetchRates", "fetchClient"].map((name) => ({
    name,
    description: `Waits ${delayMs} ms like an I/O-bound backend call, then answers.`,
    schema: z.object({ id: z.string().min(1) }).strict(),
    execute: (input, signal) =>
      log.time(async () => {
        await sleep(delayMs, undefined, signal ? { signal } : {});
        return { id: input.id, source: name };
      }),
  }));
}

/** A tool call the scripted model makes: tool name and its arguments (serialized to JSON text). */
export interface PlannedCall {
  name: string;
  args: Record<string, unknown>;
}

/** The final answer every scripted run ends with. */
export const FINAL_ANSWER = "Done.";

/**
 * The scripted model's replies for one run: one assistant message with the given parallel tool calls per
 * turn (ids `call_<turn>_<index>`), then {@link FINAL_ANSWER}. A run of `turns.length + 1` cycles.
 */
export function scriptRun(turns: PlannedCall[][]): ScriptedReply[] {
  return [
    ...turns.map((calls, turn) => ({
      toolCalls: calls.map((call, index) => ({
        id: `call_${turn + 1}_${index}`,
        name: call.name,
        arguments: JSON.stringify(call.args),
      })),
    })),
    { content: FINAL_ANSWER },
  ];
}

/** The P1 turn: both instant tools, called in parallel (arguments vary by turn). */
export function instantTurn(turn: number): PlannedCall[] {
  const jurisdictions = ["GB", "DE", "FR", "IE", "NL"];
  return [
    { name: "lookupRate", args: { jurisdiction: jurisdictions[turn % jurisdictions.length] } },
    { name: "convertAmount", args: { amount: `${100 + turn}.00`, from: "GBP", to: "EUR" } },
  ];
}
