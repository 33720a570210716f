/**
 * An AG-UI event as this adapter sends it. The names of its `type` are @ag-ui/core's `EventType` values,
 * checked against the package's types at compile time; the package itself stays out of the API bundle
 * (its runtime is zod schemas, and the bundle's budget is P4's: docs/performance.md).
 */
import type { EventType } from "@ag-ui/core";

/** One AG-UI event: `type` (an `EventType` value, e.g. "RUN_STARTED") and the event's own fields. */
export type AguiEvent = { type: `${EventType}` } & Record<string, unknown>;
