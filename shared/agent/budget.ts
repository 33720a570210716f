import type { z } from "zod";
import type { Cost } from "../money/cost.js";
import { amountOfMicro } from "../money/micro.js";
import type { ModelUsage } from "./model.js";
import type { QuotaRefusalSchema } from "./outcome-schema.js";

/**
 * The budget port of the loop: what the application's quotas (shared/quotas/) are asked around every
 * model call. The engine knows no limits, prices or stores; it asks before each call how many completion
 * tokens it may spend, and hands back what each call used. Every value crossing it is plain JSON, so a
 * durable step's checkpoint holds the decision and a replay takes the same branch.
 */

/**
 * The fewest completion tokens a model call is made for, by default (MIN_COMPLETION_TOKENS): a turn's
 * tool calls or a short answer. Below it the call is not made: a cut-off reply would be wasted.
 */
export const DEFAULT_MIN_COMPLETION_TOKENS = 256;

/**
 * One model call as the budget sees it, before it is made:
 * - `step`: the step's name (`cycle-3:model`, `cycle-3:model#1` after a wait, `summary:model`)
 * - `cycle`: the cycle it belongs to (the summary call's is one past the last)
 * - `promptTokens`: the request's estimated prompt tokens (messages and tools; an over-estimate,
 *   shared/agent/history.ts `estimateTokens`)
 * - `maxTokens`: the most completion tokens the run's own bounds allow (the model's cap, the run's token
 *   budget); the budget may lower it, never raise it
 */
export interface BudgetCall {
  step: string;
  cycle: number;
  promptTokens: number;
  maxTokens: number;
}

/**
 * Why a quota stops a model call (`details.quota` of a `quota_exceeded` run; plain JSON):
 * - `code`: QUOTA_EXCEEDED (a limit cannot cover the call) or QUOTA_UNAVAILABLE (the quota store failed:
 *   fail closed)
 * - `limit`: which limit (`user.tokensPerDay`, `tenant.costPerDay`, …); null for QUOTA_UNAVAILABLE
 * - `quota`: its value (tokens, or a decimal cost), `used`: where the total stood (reservations in
 *   flight included), `unit`: `tokens` or the price table's currency
 * - `windowEndsAt`: ISO 8601 UTC end of the window (the UTC day), `retryAfterSeconds` until then
 * - `message`: a fixed sentence for people
 */
export type QuotaRefusal = z.infer<typeof QuotaRefusalSchema>;

/**
 * What the budget decided for one call, recorded in the model step's result:
 * - `granted`: the call may spend at most `maxTokens` completion tokens (sent as `max_tokens`)
 * - `refused`: no call; `refusal` says why
 * `state` is the budget's own record of what it wrote (opaque to the loop, plain JSON), handed back to
 * {@link ModelBudget.observe} with every step result, replayed ones included.
 */
export type BudgetDecision =
  | { kind: "granted"; maxTokens: number; state: unknown }
  | { kind: "refused"; refusal: QuotaRefusal; state: unknown };

/**
 * The budget of one run (shared/quotas/run-budget.ts implements it):
 * - `reserve`: inside the model step, before the call: reserve the call's worst case (the prompt's
 *   estimate plus the `max_tokens` granted), or refuse
 * - `observe`: outside the step, with the decision a step result carries and the call's usage (null
 *   when no call was made), for every step result including those a durable replay returns from its
 *   checkpoint: how the budget rebuilds what it holds without a read
 */
export interface ModelBudget {
  reserve(call: BudgetCall): Promise<BudgetDecision>;
  observe(decision: BudgetDecision, usage: ModelUsage | null): void;
  /** Inside the step, after the call: what it cost from its usage (the price table's), see {@link CallCost}. */
  costOf(usage: ModelUsage): CallCost;
}

/**
 * One model call's cost (plain JSON, in its step's result): `micro`, an integer count of micro-units
 * (10⁻⁶) of `currency`, the exact cost rounded half-up; or, when the model has no price, `micro: null`
 * and a `note` naming it.
 */
export type CallCost = { micro: number; currency: string } | { micro: null; note: string };

/** One call's {@link CallCost} as the API shows it: null when its model has no price. */
export function costView(cost: CallCost): Cost | null {
  return cost.micro === null ? null : { amount: amountOfMicro(cost.micro), currency: cost.currency };
}

/**
 * The sum of calls' costs: {@link Cost} when every call was priced, else null with the first call's
 * `note`; `undefined` for no calls.
 */
export function sumCosts(
  costs: readonly CallCost[],
): { cost: Cost | null; costNote: string | null } | undefined {
  if (costs.length === 0) return undefined;
  let micro = 0;
  let currency = "";
  for (const cost of costs) {
    if (cost.micro === null) return { cost: null, costNote: cost.note };
    micro += cost.micro;
    currency = cost.currency;
  }
  return { cost: { amount: amountOfMicro(micro), currency }, costNote: null };
}

/**
 * Where a run whose quota refused a call may wait for budget (the durable runner: a durable wait that
 * resumes when the window resets or the limit is raised). Resolves true to try the call again (as the
 * step `<step>#<attempt + 1>`), false to end the run `quota_exceeded`. Without one, the run ends at once.
 */
export type QuotaWait = (request: {
  cycle: number;
  attempt: number;
  refusal: QuotaRefusal;
}) => Promise<boolean>;
