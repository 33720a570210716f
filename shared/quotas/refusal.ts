import type { QuotaRefusal } from "../agent/budget.js";
import { amountOfMicro } from "../money/micro.js";
import type { namesOf } from "./item.js";
import type { EffectiveLimits } from "./limits.js";

/**
 * The {@link QuotaRefusal} of a model call a daily limit cannot cover: which limit (`total`, a total's
 * name in the quota item), its value and where the total stands (`totals`, reservations in flight
 * included), in tokens or in the price table's currency, and when the UTC day ends.
 */
export function refusalOf(
  names: ReturnType<typeof namesOf>,
  limits: EffectiveLimits,
  total: string,
  totals: Readonly<Record<string, number>>,
  context: { currency: string | null; retryAfterSeconds: number; windowEndsAt: string },
): QuotaRefusal {
  const which = [
    {
      name: names.tenant.tokens,
      limit: "tenant.tokensPerDay",
      value: limits.tenant.tokensPerDay,
      cost: false,
    },
    { name: names.user.tokens, limit: "user.tokensPerDay", value: limits.user.tokensPerDay, cost: false },
    { name: names.tenant.cost, limit: "tenant.costPerDay", value: limits.tenant.costMicroPerDay, cost: true },
    { name: names.user.cost, limit: "user.costPerDay", value: limits.user.costMicroPerDay, cost: true },
  ].find((entry) => entry.name === total);
  const used = totals[total] ?? 0;
  const quota = which?.value ?? 0;
  const unit = which?.cost ? (context.currency ?? "") : "tokens";
  const show = (value: number) => (which?.cost ? amountOfMicro(value) : value);
  const whose = which?.limit.startsWith("user") ? "Your" : "Your tenant's";
  const what = which?.cost ? "cost" : "token";
  return {
    code: "QUOTA_EXCEEDED",
    limit: which?.limit ?? total,
    quota: show(quota),
    used: show(used),
    unit,
    windowEndsAt: context.windowEndsAt,
    retryAfterSeconds: context.retryAfterSeconds,
    message: `${whose} daily ${what} limit (${show(quota)} ${unit}) cannot cover the next model call (${show(used)} used or reserved today), so it was not made. The limit resets at ${context.windowEndsAt}.`,
  };
}
