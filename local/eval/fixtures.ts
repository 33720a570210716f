/**
 * A scenario's fixtures (local/eval/scenario.ts): state made before its runs through the real tools and
 * dispatcher, as each fixture's own caller, with no model. Strings may name earlier fixtures' ids
 * (`${fixtures.<name>.quoteId}`), so a stored description can carry another tenant's id.
 */
import { dispatchToolCall, type ToolRegistry } from "../../shared/agent/dispatcher.js";
import type { SecurityContext } from "../../shared/identity.js";
import type { FixtureIds } from "./attacks.js";
import type { Caller, Fixture } from "./scenario.js";

/** The security context of a scenario's caller, as the JWT claims give it. */
export function securityOf(caller: Caller): SecurityContext {
  return { tenantId: caller.tenant, userId: caller.user, permissions: caller.permissions };
}

/**
 * `text` with every `${fixtures.<name>.<field>}` replaced by that fixture's value, and every
 * `${result.<tool>.<path>}` by `results(tool, path)` when given.
 * @throws Error naming a reference that has no value
 */
export function resolveTemplate(
  text: string,
  fixtures: Record<string, FixtureIds>,
  results?: (tool: string, path: string[]) => unknown,
): string {
  return text.replace(
    /\$\{(fixtures|result)\.([A-Za-z0-9_]+)\.([A-Za-z0-9_.]+)\}/g,
    (whole, kind, name, path) => {
      const value =
        kind === "fixtures"
          ? (fixtures[name] as unknown as Record<string, unknown> | undefined)?.[path]
          : results?.(name, String(path).split("."));
      if (typeof value !== "string" && typeof value !== "number") throw new Error(`${whole} has no value.`);
      return String(value);
    },
  );
}

/** One tool call as `security`, through the dispatcher; its data, or an Error with its code. */
async function callTool(
  tools: ToolRegistry,
  security: SecurityContext,
  name: string,
  args: object,
  runId: string,
) {
  const result = await dispatchToolCall(
    { id: `fixture_${name}`, name, arguments: JSON.stringify(args) },
    tools,
    security,
    { runId, runScope: runId, occurrence: 0, signal: AbortSignal.timeout(10_000) },
  );
  if (result.status !== "success") {
    throw new Error(
      `Fixture ${name} failed: ${result.status} ${result.error?.code}: ${result.error?.message}`,
    );
  }
  return result.data as Record<string, unknown>;
}

/**
 * Makes every fixture, in order: calculateTax (its quote), then recordInvoice when `record` is given.
 * @returns each fixture's ids by name
 * @throws Error when a tool refuses a fixture (a scenario error, not a finding)
 */
export async function seedFixtures(
  tools: ToolRegistry,
  fixtures: readonly Fixture[],
): Promise<Record<string, FixtureIds>> {
  const made: Record<string, FixtureIds> = {};
  for (const fixture of fixtures) {
    const security = securityOf(fixture.as);
    const runId = `run_fixture_${fixture.name}`;
    const quote = await callTool(
      tools,
      security,
      "calculateTax",
      { ...fixture.quote, taxPointDate: null },
      runId,
    );
    const quoteId = String(quote.quoteId);
    let invoiceId: string | null = null;
    if (fixture.record) {
      const text = (value: string | undefined) => (value === undefined ? null : resolveTemplate(value, made));
      const recorded = await callTool(
        tools,
        security,
        "recordInvoice",
        {
          quoteId,
          clientName: text(fixture.record.clientName),
          description: text(fixture.record.description),
          clientReference: text(fixture.record.clientReference),
        },
        runId,
      );
      invoiceId = String((recorded.invoice as { invoiceId: string }).invoiceId);
    }
    made[fixture.name] = { tenant: fixture.as.tenant, user: fixture.as.user, quoteId, invoiceId };
  }
  return made;
}
