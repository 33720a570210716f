import type { z } from "zod";
import type { SecurityContext } from "../identity.js";
import { type StrictToolSchema, toStrictToolSchema } from "./strict-schema.js";

/**
 * One tool call as the model asked for it: `arguments` is the raw JSON text the model produced.
 * `malformedArguments` is set when the provider sent the arguments as a JSON value that is neither a
 * string nor an object (its JSON type: "number", "array", "null", "boolean"); `arguments` then holds that
 * value's JSON text, and the call is a validation_error MALFORMED_ARGUMENTS.
 */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
  malformedArguments?: string;
}

/**
 * What a tool handler receives besides its validated input.
 * - `runId`: the run this call belongs to
 * - `idempotencyKey`: set for mutating tools; the handler must make its effect at most once per key
 * - `signal`: aborted at the run's deadline, or at the tool's own `timeoutMs`; handlers pass it to every
 *   I/O call
 */
export interface ToolContext {
  runId: string;
  idempotencyKey: string | undefined;
  /**
   * The call's operation key, given to every tool (mutating or not): the same value as a mutating
   * tool's idempotency key would be (`toolIdempotencyKey`). A retry of the same request under the same
   * Idempotency-Key gets the same value. calculateTax derives its quoteId from it. Computed on first read
   * (it hashes the canonical input: tools that never read it do not pay for it), from the validated input
   * as the handler received it: read it before changing `input`, if a handler ever does.
   */
  operationKey?: string;
  signal: AbortSignal;
}

/**
 * A tool, declared once. The function definition offered to the model (strict mode) is derived from
 * `inputSchema` (shared/agent/model-step.ts `modelTool`, sent by the model adapter); nothing about its
 * arguments is written twice.
 * - `requiredPermission`: checked against the caller's security context before the input is parsed
 * - `isMutating`: the dispatcher gives mutating tools an idempotency key
 * - `handler`: returns JSON-serializable data, or throws {@link ToolBusinessError} for a business rule
 * - `timeoutMs`: optional upper bound of one call in ms. A call is not started when the run has less time
 *   left than this, and is aborted (fatal_error TOOL_TIMEOUT) when it takes longer.
 * - `describeEffect`: optional, for a mutating tool: a sentence on what a successful call did, from its
 *   result data, for the outcome of a run that stops afterwards
 * - `needsApproval`: optional approval policy (docs/approvals.md), asked after validation and before the
 *   call runs, with the validated input and the caller: it decides from backend data (never from the
 *   model's text) and returns the preview a person decides on, or null when the call may run now.
 *
 * - `hints`: what the tool declares about its effect, published as MCP tool annotations (docs/mcp.md):
 *   `readOnly` (changes nothing), `destructive` (may overwrite or delete what exists; an additive write
 *   such as recording a new invoice is not), `idempotent` (the same call again has no further effect).
 *   Absent: none declared (MCP clients then assume the worst: not read-only, destructive).
 * - `outputSchema`: the shape of a successful result's data (MCP `outputSchema`, the result's
 *   `structuredContent`); absent: results are unstructured text only
 * - `businessKey`: for a mutating tool, the input field whose value the tool itself writes at most once
 *   (recordInvoice: `quoteId`, one invoice per quote). A call that comes without an idempotency key (an MCP
 *   call with none in `_meta`) may run guarded by it; a mutating tool without one refuses such a call.
 *
 * `handler` is declared as a method so a `ToolDefinition<S>` is a `ToolDefinition` (TypeScript checks
 * method parameters bivariantly): a registry holds tools of different schemas without a cast, and the
 * dispatcher only ever calls a handler with the output of that same tool's `inputSchema`.
 */
export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  inputSchema: S;
  isMutating: boolean;
  requiredPermission: string | undefined;
  timeoutMs?: number;
  hints?: ToolHints;
  outputSchema?: z.ZodObject;
  businessKey?: string;
  handler(input: z.output<S>, security: SecurityContext, context: ToolContext): Promise<unknown>;
  /**
   * For a mutating tool: one sentence on what a successful call did, from its result `data` (the
   * handler's return value), for the outcome of a run that stops after it (`details.effects`).
   */
  describeEffect?(data: unknown): string;
  /** The facts this tool vouches for, for policies (see {@link ToolFacts}); absent: none (`{}`). */
  facts?: ToolFacts<S>;
  needsApproval?(
    input: z.output<S>,
    security: SecurityContext,
    context: { signal: AbortSignal },
  ): Promise<ApprovalPreview | null>;
}

/** What a tool declares about its effect (see `ToolDefinition.hints`); every field false when absent. */
export interface ToolHints {
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
}

/**
 * What a person sees before deciding on a call that needs approval: the backend's own numbers (for
 * recordInvoice the quote's subtotal, tax, gross total and currency, exact decimal strings in major
 * units) and what they refer to (its jurisdiction and the tax rule's `rateVersion`), from the tool's
 * {@link ToolFacts}. Plain JSON; never text the model wrote about itself. `policyIds`: the policies that
 * asked for the approval (docs/policies.md); `threshold`: the APPROVAL_RULES threshold (decimal string,
 * major units) the gross total reached, when the approval came from that shorthand.
 */
export interface ApprovalPreview {
  [field: string]: string | string[] | undefined;
  quoteId?: string;
  jurisdiction?: string;
  rateVersion?: string;
  subtotal?: string;
  taxAmount?: string;
  grossTotal?: string;
  currency?: string;
  threshold?: string;
  policyIds?: string[];
}

/** A fact's value: Cedar's Long (a safe integer, e.g. minor units), String or Boolean. */
export type FactValue = string | number | boolean;

/**
 * What a tool vouches for about one call, read from the backend (never from the model's text), before
 * the call runs (docs/policies.md `context.facts`):
 * - `facts`: the values policies see; each field of {@link ToolFacts.schema}
 * - `preview`: the same numbers as a person reads them, for an approval
 */
export interface VouchedFacts {
  facts: Record<string, FactValue>;
  preview: ApprovalPreview;
}

/**
 * A tool's declaration of the facts it vouches for: the one place per tool (docs/policies.md).
 * - `schema`: their shape (zod): integer fields become Cedar Longs, strings Strings, booleans Booleans;
 *   the generated Cedar schema's `context.facts` of the tool's action
 * - `metered`: the tool's calls count in running totals (`context.totals`) by `facts.currency` and
 *   `facts.grossMinor`, reserved before the decision and kept once the effect happened; its facts must
 *   have both fields
 * - `read`: the facts of one validated call, or null when the backend has none to vouch for because the
 *   call cannot have an effect (recordInvoice of a quote that is missing or expired: the tool refuses it,
 *   or returns the invoice a retry of the same operation already recorded). A call without facts is not
 *   evaluated: it runs as validated and the tool itself refuses it. Throws on a store failure (the call
 *   is then refused: POLICY_CHECK_FAILED).
 */
export interface ToolFacts<S extends z.ZodObject = z.ZodObject> {
  schema: z.ZodObject;
  metered?: boolean;
  read(
    input: z.output<S>,
    security: SecurityContext,
    context: { signal: AbortSignal },
  ): Promise<VouchedFacts | null>;
  /**
   * Optional: true when the call is certain to have no effect although its facts were read
   * (recordInvoice: another operation already recorded the quote). Asked only before a person would be
   * asked to approve the call, so the common path makes no extra request; true lets the call run instead
   * (the tool refuses it). Never throws: on any doubt (no operation key, a failed read) it is false and
   * the approval is asked for (fail closed).
   */
  settled?(
    input: z.output<S>,
    security: SecurityContext,
    context: { signal: AbortSignal; operationKey?: () => string },
  ): Promise<boolean>;
  /**
   * Optional: true when a successful call's output reports an effect an earlier call with the same
   * operation key already had (recordInvoice: `replayed`). The running totals counted it then, in the UTC
   * day it happened; a metered call that still made a fresh reservation (a replay after midnight, in the
   * next day's item) has it released, so a replay never counts twice.
   */
  replayed?(output: unknown): boolean;
}

/**
 * A business rule said no (unsupported jurisdiction, unknown invoice, …). The model sees `code`,
 * `message` and `details` as a `business_error` tool result.
 */
export class ToolBusinessError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }
}

/** Raised at registration when a tool declaration is unusable; the message says how to fix it. */
export class ToolDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Declares a tool; keeps the schema's type for the handler's `input`. Converts its schema to an OpenAI
 * strict JSON Schema now, so a schema outside the strict subset fails at registration, not mid-run.
 * @throws ToolDefinitionError when the name is not a valid OpenAI function name (`^[a-zA-Z0-9_-]{1,64}$`),
 *   `timeoutMs` is not a positive integer, `businessKey` is not a field of a mutating tool's input, or the schema is outside the strict subset (the message says
 *   how to fix it; see `toStrictToolSchema`)
 * @example defineTool({ name: "ping", description: "…", inputSchema: z.object({}).strict(), isMutating: false,
 *   requiredPermission: undefined, handler: async () => ({ pong: true }) })
 */
export function defineTool<S extends z.ZodObject>(definition: ToolDefinition<S>): ToolDefinition<S> {
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(definition.name)) {
    throw new ToolDefinitionError(`Tool name "${definition.name}" must match ^[a-zA-Z0-9_-]{1,64}$.`);
  }
  if (
    definition.timeoutMs !== undefined &&
    !(Number.isSafeInteger(definition.timeoutMs) && definition.timeoutMs > 0)
  ) {
    throw new ToolDefinitionError(
      `Tool "${definition.name}": timeoutMs must be a positive integer (ms), got ${String(definition.timeoutMs)}.`,
    );
  }
  if (
    definition.businessKey !== undefined &&
    !(definition.isMutating && definition.businessKey in definition.inputSchema.shape)
  ) {
    throw new ToolDefinitionError(
      `Tool "${definition.name}": businessKey "${definition.businessKey}" must name a field of the input schema of a mutating tool.`,
    );
  }
  strictSchemaOf(definition);
  return definition;
}

/** Strict schemas by tool definition, converted once per definition. */
const strictSchemas = new WeakMap<ToolDefinition, StrictToolSchema>();

/**
 * The tool's input schema as an OpenAI strict JSON Schema plus its null stripper (see
 * `toStrictToolSchema`), converted once and cached per definition.
 * @throws ToolDefinitionError when the schema is outside the strict subset; the message names the tool,
 *   the field and the fix
 */
export function strictSchemaOf(definition: ToolDefinition): StrictToolSchema {
  let strict = strictSchemas.get(definition);
  if (!strict) {
    try {
      strict = toStrictToolSchema(definition.inputSchema);
    } catch (error) {
      throw new ToolDefinitionError(
        `Tool "${definition.name}": its zod schema is not an OpenAI strict JSON Schema. ${(error as Error).message}`,
      );
    }
    strictSchemas.set(definition, strict);
  }
  return strict;
}
