import { amountOfMicro } from "../money/micro.js";
import { ATTR, failSpan, inSpan, Kind, setAttributes, setContent, tracingOptions } from "../tracing.js";
import type { CallCost } from "./budget.js";
import type { ChatMessage, Model, ModelFailure, ModelReply } from "./model.js";
import type { ToolResult } from "./result.js";
import type { ToolCallRequest } from "./tool.js";
import { inputMessages, outputMessages } from "./trace-messages.js";

/**
 * The stable code of a failed model call, as `error.type` of its `chat` span: the problem code the HTTP
 * layer answers a run stopped by it with (functions/api/problem-details.ts), never the provider's text.
 */
export function modelErrorCode(failure: Pick<ModelFailure, "cause">): string {
  switch (failure.cause) {
    case "deadline":
      return "DEADLINE_EXCEEDED";
    case "context_length":
      return "CONTEXT_LENGTH_EXCEEDED";
    default:
      return "MODEL_UNAVAILABLE";
  }
}

/**
 * Runs one model call inside its `chat {model}` span (CLIENT; GenAI conventions): operation, provider,
 * requested model and server at start; finish reason and token usage (input = prompt tokens, output =
 * completion tokens) and, for a priced call, its cost (`boundloop.cost.amount`, `boundloop.cost.currency`)
 * from the reply; a failure sets status error, `error.type` (see
 * {@link modelErrorCode}) and the provider's HTTP status. The request's messages and the reply go on
 * the span only with content capture on, in the conventions' `{ role, parts }` shape (./trace-messages.ts).
 */
export function chatSpan<T extends ModelReply | ModelFailure>(
  model: Model,
  messages: readonly ChatMessage[],
  call: () => Promise<T>,
): Promise<T> {
  // Tracing off: no attributes, closures or extra awaits per model call (P1's loop overhead).
  if (!tracingOptions().enabled) return call();
  const about = model.telemetry ?? { providerName: "unknown", requestModel: "unknown" };
  return inSpan(
    `chat ${about.requestModel}`,
    {
      kind: Kind.CLIENT,
      attributes: {
        [ATTR.operationName]: "chat",
        [ATTR.providerName]: about.providerName,
        [ATTR.requestModel]: about.requestModel,
        ...(about.serverAddress ? { [ATTR.serverAddress]: about.serverAddress } : {}),
        ...(about.serverPort ? { [ATTR.serverPort]: about.serverPort } : {}),
      },
    },
    async (span) => {
      setContent(span, ATTR.inputMessages, () => inputMessages(messages));
      const response = await call();
      const cost = (response as { cost?: CallCost }).cost;
      setAttributes(span, {
        [ATTR.inputTokens]: response.usage.promptTokens,
        [ATTR.outputTokens]: response.usage.completionTokens,
        ...(cost?.micro == null
          ? {}
          : { [ATTR.costAmount]: amountOfMicro(cost.micro), [ATTR.costCurrency]: cost.currency }),
      });
      if (response.kind === "failure") {
        failSpan(span, modelErrorCode(response));
        setAttributes(span, { "http.response.status_code": response.status ?? undefined });
      } else {
        if (response.finishReason) span?.setAttribute(ATTR.finishReasons, [response.finishReason]);
        setContent(span, ATTR.outputMessages, () => outputMessages(response));
      }
      return response;
    },
  );
}

/**
 * Runs one tool call inside its `execute_tool {tool}` span (INTERNAL; GenAI conventions): tool name,
 * call id and type at start; the result's status, the idempotency key of a mutating call, and for a
 * failed call status error with `error.type` = the tool error's stable code (INVALID_ARGUMENTS,
 * STORE_UNAVAILABLE, a business code, POLICY_DENIED…), and the policy decision's explanation
 * (`boundloop.policy.decision`, `.ids`, `.source`, `.version`, `.shadow.decision`, `.shadow.ids`). Store calls the tool makes are its children. Arguments and
 * the result's data go on the span only with content capture on.
 */
export function toolSpan(call: ToolCallRequest, run: () => Promise<ToolResult>): Promise<ToolResult> {
  if (!tracingOptions().enabled) return run();
  return inSpan(
    `execute_tool ${call.name}`,
    {
      kind: Kind.INTERNAL,
      attributes: {
        [ATTR.operationName]: "execute_tool",
        [ATTR.toolName]: call.name,
        [ATTR.toolCallId]: call.id,
        [ATTR.toolType]: "function",
      },
    },
    async (span) => {
      // The model sends the arguments as JSON text: that text is the attribute (re-encoding it would
      // make a JSON string of it, which a trace viewer cannot show as the object it is).
      if (tracingOptions().captureContent) span?.setAttribute(ATTR.toolArguments, call.arguments);
      const result = await run();
      const policy = result.metadata.policy;
      setAttributes(span, {
        [ATTR.toolStatus]: result.status,
        [ATTR.idempotencyKey]: result.metadata.idempotencyKey ?? undefined,
        [ATTR.policyDecision]: policy?.decision,
        [ATTR.policyIds]: policy?.policyIds,
        [ATTR.policySource]: policy?.source,
        [ATTR.policyVersion]: policy?.version ?? undefined,
        [ATTR.policyShadowDecision]: policy?.shadow?.decision,
        [ATTR.policyShadowIds]: policy?.shadow?.policyIds,
      });
      if (result.error) failSpan(span, result.error.code);
      else setContent(span, ATTR.toolResult, () => result.data);
      return result;
    },
  );
}
