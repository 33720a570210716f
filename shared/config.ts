import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";
import type { RunLimits } from "./agent/limits.js";

/**
 * The function's timeout in seconds, as deployed (infra/stack.ts) and as the local scripts run it
 * (`npm start`, `npm run invoke`, `npm run dev`): below API Gateway HTTP API's 30 s maximum
 * integration timeout (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html),
 * so the function answers (or times out) before the gateway gives up on it.
 */
export const FUNCTION_TIMEOUT_SECONDS = 29;

// zod/mini (same zod, same core, a tree-shakable API): the deployed handler parses its environment at
// cold start before anything else is loaded, and zod/mini keeps that to the few checks used here instead
// of all of zod (measured in bench/cold-start.ts). zod/mini loads no locale by itself: English messages.
z.config(en());

/**
 * A Bedrock model id (`provider.model-version`, e.g. `openai.gpt-oss-120b-1:0`, `qwen.qwen3-32b-v1:0`) or a
 * system-defined inference profile id (the same with a geography prefix, e.g. `us.deepseek.r1-v1:0`,
 * `global.…`), as the Bedrock model catalogue spells them
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/models-supported.html). ARNs are not accepted:
 * the stack builds the ARNs it grants from the id and its own region.
 */
export const BEDROCK_MODEL_ID_PATTERN =
  /^(?:(?:us|eu|apac|jp|au|ca|us-gov|global)\.)?[a-z0-9][a-z0-9-]*\.[a-z0-9][a-z0-9._-]*(?::[a-z0-9]+){0,2}$/;

/** The message of a model id that does not match {@link BEDROCK_MODEL_ID_PATTERN}. */
export const BEDROCK_MODEL_ID_RULE =
  "must be a Bedrock model id or inference profile id, e.g. openai.gpt-oss-120b-1:0 or us.deepseek.r1-v1:0";

/**
 * The Bedrock model used when BEDROCK_MODEL_ID is unset: gpt-oss-120b, served by the Chat Completions
 * endpoint in every Region that has it, with function calling, and without an inference profile (so
 * the grant is one foundation-model ARN in the stack's Region). docs/deploy.md lists others.
 */
export const DEFAULT_BEDROCK_MODEL_ID = "openai.gpt-oss-120b-1:0";

/** The longest SYSTEM_PROMPT accepted, in characters (about 5 000 tokens: it is sent on every cycle). */
export const MAX_SYSTEM_PROMPT_CHARS = 20_000;

/** Whether `text` is a web origin (`https://host[:port]`, or http): what a browser sends as `Origin`. */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return /^https?:$/.test(url.protocol) && url.origin === text;
  } catch {
    return false;
  }
}

/** Turns an empty string (an unset variable in many shells and .env files) into undefined. */
const optionalString = z.pipe(
  z.optional(z.string()),
  z.transform((value: string | undefined) =>
    value === undefined || value.trim() === "" ? undefined : value.trim(),
  ),
);

/** An optional URL: unset or empty gives undefined. */
const optionalUrl = z.pipe(optionalString, z.optional(z.url()));

/** An integer read from an environment string, within [min, max], with a default. */
function envInt(defaultValue: number, min: number, max: number) {
  return z._default(z.coerce.number().check(z.int(), z.minimum(min), z.maximum(max)), defaultValue);
}

/** A positive integer read from an environment string, with a default. */
function positiveInt(defaultValue: number, max: number) {
  return z._default(z.coerce.number().check(z.int(), z.positive(), z.maximum(max)), defaultValue);
}

/** A string of 1 to 255 characters, with a default. */
function boundedName(defaultValue: string) {
  return z._default(z.string().check(z.minLength(1), z.maxLength(255)), defaultValue);
}

/**
 * A boolean read from an environment string: "true"/"1" or "false"/"0"; unset or empty gives the
 * default. The one boolean parser of every flag.
 */
function envBoolean(defaultValue: boolean) {
  return z.pipe(
    z.pipe(optionalString, z.optional(z.enum(["true", "false", "1", "0"]))),
    z.transform((value) => (value === undefined ? defaultValue : value === "true" || value === "1")),
  );
}

/** A comma separated list of claim names ("tenant_id,custom:tenant_id"), trimmed, at least one. */
function claimList(defaultValue: string) {
  return z.pipe(
    z.pipe(
      optionalString,
      z.transform((value) =>
        (value ?? defaultValue)
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name.length > 0),
      ),
    ),
    z
      .array(z.string().check(z.regex(/^[A-Za-z0-9:_.-]{1,128}$/, "claim names are A-Z a-z 0-9 : _ . -")))
      .check(z.minLength(1)),
  );
}

/** A variable holding JSON, parsed (unset or empty gives `{}`); its schema follows in a pipe. */
const jsonEnv = z.pipe(
  z.optional(z.string()),
  z.transform((value, ctx) => {
    if (value === undefined || value.trim() === "") return {};
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.issues.push({ code: "custom", message: "must be a JSON object", input: value });
      return z.NEVER;
    }
  }),
);

/**
 * IAM_PRINCIPAL_TENANTS: JSON object from an IAM principal ARN (a user ARN, or an assumed-role ARN
 * without its session name) to the tenant and permissions that principal acts with.
 */
const IamPrincipalTenants = z.pipe(
  jsonEnv,
  z.record(
    z
      .string()
      .check(z.regex(/^arn:aws[a-z-]*:(iam|sts)::\d{12}:/, "keys must be IAM user or assumed-role ARNs")),
    z.strictObject({
      tenantId: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/)),
      permissions: z._default(z.array(z.string().check(z.minLength(1), z.maxLength(128))), []),
    }),
  ),
);

/**
 * APPROVAL_RULES: JSON object from a tool that declares an approval policy (today `recordInvoice`) to
 * a per-currency threshold (ISO 4217 code → a positive decimal string in major units, e.g.
 * `{"recordInvoice":{"GBP":"1000.00"}}`). A call whose backend amount (for recordInvoice: the quote's
 * gross total) is at or above its currency's threshold waits for a person's approval
 * (docs/approvals.md). Unset or empty: no approvals.
 */
const ApprovalRules = z.pipe(
  jsonEnv,
  z.strictObject({
    recordInvoice: z.optional(
      z
        .record(
          z.string(),
          z
            .string()
            .check(
              z.regex(
                /^(?:0|[1-9]\d{0,14})(?:\.\d{1,4})?$/,
                'thresholds must be decimal strings in major units, e.g. "1000.00"',
              ),
            ),
        )
        .check(
          z.refine((rule) => Object.keys(rule).every((currency) => /^[A-Z]{3}$/.test(currency)), {
            message: "keys must be ISO 4217 currency codes (GBP, BDT, …)",
          }),
        ),
    ),
  }),
);

/** JWT_JWKS: an inline JSON Web Key Set (`{"keys":[…]}`, RFC 7517); unset or empty: none. */
const InlineJwks = z.pipe(
  jsonEnv,
  z.union([
    z.strictObject({}),
    z.object({ keys: z.array(z.record(z.string(), z.unknown())).check(z.minLength(1)) }),
  ]),
);

/**
 * The environment the service reads, once, at cold start. This schema is the single source of truth
 * for variable names, defaults and bounds; infra/ and `.env.example` take their names from it.
 *
 * Limits and where they come from:
 * - MODEL_MAX_TOKENS (default 4096 tokens): `max_tokens` of every chat completion request, so the
 *   completion limit is ours, not the server's default (which may be as low as a few hundred tokens on
 *   local servers, or the whole context). An answer here is a few sentences and a turn's tool calls are
 *   a few hundred tokens: 4096 leaves ample room, and bounds what one runaway completion costs.
 * - MAX_CYCLES (default 5): the design card's default cycle cap per run.
 * - RUN_TIMEOUT_MS (default 25000 ms): below the function timeout ({@link FUNCTION_TIMEOUT_SECONDS}), so
 *   a run ends, and its outcome is written, before the function is stopped.
 * - DEADLINE_RESERVE_MS (default 1500 ms): time kept back from the Lambda's remaining time to persist
 *   the outcome and answer.
 * - QUOTE_TTL_SECONDS (default 900 s = 15 min): how long a calculateTax quote can be recorded. Long
 *   enough for a run (at most RUN_TIMEOUT_MS) plus a user confirming in a follow-up run; short enough
 *   that a rule-table change or a stale conversation does not reach the ledger much later.
 * - MAX_TOTAL_TOKENS (default 100000): a cost guard. A run resends its transcript on every cycle; five
 *   cycles with the 8000-character prompt cap (~2k tokens), the tool schemas and a few tool results at
 *   the 16 KB cap stay well below it, so reaching it means a runaway run.
 * - MAX_TOOL_CALLS_PER_TURN (default 8): the seed scenario asks for 2 per turn; a turn asking for more
 *   than 8 is treated as runaway, the excess calls get a validation_error and do not run.
 * - MAX_TOOL_CALLS_PER_RUN (default 20): MAX_CYCLES' default (5) × 4 calls per cycle.
 * - MAX_PARALLEL_TOOL_CALLS (default 4): the tools are I/O-bound (DynamoDB); 4 keeps a typical turn
 *   fully parallel without bursting the table's write capacity from one run.
 * - MAX_TOOL_RESULT_BYTES (default 16384): cap on one tool message (UTF-8 bytes); a bigger result is
 *   cut (shared/agent/result.ts capToolResult) so one result cannot flood the model's context.
 * - LOOP_BREAKER_THRESHOLD (default 2): N, the count of identical failures (same tool, canonical
 *   arguments, error code) at which the N-th gets a final hint; the next ends the run loop_detected.
 * - SUMMARIZE_ON_MAX_CYCLES (default false): off, so a run never makes more than MAX_CYCLES model calls
 *   unless the operator opts in to one last tool-less summary call.
 * - IDEMPOTENCY_TTL_SECONDS (default 86400 s = 24 h): retention of an Idempotency-Key record (24 h, as
 *   Stripe keeps keys); written as the epoch-seconds `ttl` attribute, and checked by every condition
 *   because DynamoDB's TTL deletion lags (up to days).
 * - IDEMPOTENCY_KEY_REQUIRED (default false): when true, `POST /v1/runs` without an Idempotency-Key is a 400.
 * - RUN_TTL_SECONDS (default 2592000 s = 30 days): how long run records and their audit steps live
 *   before DynamoDB TTL removes them. Long enough to answer a dispute or support ticket within a monthly
 *   billing cycle; short enough not to keep model-generated text (tool arguments, answers) for good.
 *   The ledger's invoices never expire: they are the business record, runs are the operational one.
 * - HISTORY_MAX_TOKENS (default 8000, estimated tokens; 0 to 1000000): cap
 *   on the earlier conversation a run continuing `previousRunId` sends (shared/agent/history.ts
 *   estimates without a tokenizer and drops the oldest whole turns). A follow-up such as "now record it"
 *   needs the last exchange (well under 2000 tokens with a few tool results); 8000 keeps several. The
 *   history is resent on every cycle, so at the default 5 cycles it can take 40% of MAX_TOTAL_TOKENS'
 *   default; a run also never gets more history than MAX_TOTAL_TOKENS leaves after its own prompt
 *   (see docs/conversations.md). 0 turns history off: a continuation starts from the new prompt alone.
 * - MAX_BODY_BYTES (default 65536): request body cap; a prompt of 8000 characters is at most 48 KB of
 *   JSON even with every character \u-escaped.
 * - DYNAMODB_REQUEST_TIMEOUT_MS (default 3000 ms): per-attempt socket timeout of DynamoDB calls, so an
 *   unreachable table answers 503 STORE_UNAVAILABLE instead of hanging until the Lambda times out.
 * - MODEL_PROVIDER (default openai-compatible): which model the function calls. `openai-compatible`: the
 *   server at OPENAI_BASE_URL with OPENAI_MODEL and the key below (today's path). `bedrock`: Amazon
 *   Bedrock's OpenAI-compatible Chat Completions endpoint in AWS_REGION with BEDROCK_MODEL_ID, signed in
 *   with short-term Bedrock API keys the function makes from its own AWS credentials (no key to store;
 *   shared/model/bedrock.ts, docs/deploy.md "Use Bedrock").
 * - BEDROCK_MODEL_ID (default `openai.gpt-oss-120b-1:0`): a Bedrock model id or system inference profile id
 *   ({@link BEDROCK_MODEL_ID_PATTERN}) that the Chat Completions endpoint serves with tool calling.
 * - BEDROCK_BASE_URL: local and tests only: the Bedrock endpoint to call instead of the region's
 *   (local/bedrock-stand-in.ts). The stack never sets it: its IAM grant and the key's region are the region's.
 * - OPENAI_API_KEY_SECRET_NAME: in AWS, the Secrets Manager secret holding the OpenAI key (read
 *   lazily on the first model call, cached). Mutually exclusive with OPENAI_API_KEY.
 * - TENANT_CLAIMS / PERMISSION_CLAIMS: which authorizer claims carry the tenant (first present wins)
 *   and the permissions (all are merged).
 * - ASYNC_RUN_TIMEOUT_MS (default 600000 ms = 10 min): wall-time cap of a durable run (`Prefer:
 *   respond-async`), the issue's default. Its deadline is absolute, fixed when the run starts, and capped by
 *   DURABLE_EXECUTION_TIMEOUT_SECONDS minus DEADLINE_RESERVE_MS, so the run ends in a typed status before
 *   Lambda times the execution out.
 * - DURABLE_EXECUTION_TIMEOUT_SECONDS (default 900 s): the runner function's durable execution timeout
 *   (infra/ sets both from one setting). Lambda durable executions may last up to one year (31 536 000 s).
 * - RUNNER_FUNCTION_ARN: the qualified ARN (alias) of the durable runner the API starts executions on;
 *   unset outside AWS, where a local runner is injected instead (local/durable-executions.ts).
 * - JWT_AUDIENCE (comma separated), with JWT_ISSUER and the keys of JWT_JWKS / JWT_JWKS_URL (below): the
 *   streaming function (functions/stream/) verifies the bearer token itself with these, as the HTTP
 *   API's JWT authorizer does with the same issuer and audiences (infra/ sets both from one setting).
 * - CONSOLE_CLIENT_ID: the OAuth client id the operator console (/console, functions/api/console.ts) signs
 *   in with at JWT_ISSUER (authorization code with PKCE); unset: the console asks for a pasted token.
 * - CONSOLE_STREAM_URL: the streaming function URL the console follows run events on (the API
 *   function's page names it; the stack sets it); unset: the console reads them from its own origin.
 * - CONSOLE_ORIGINS (comma separated origins, default none): the origins whose pages may call the
 *   streaming function from a browser (CORS, functions/stream/entry.ts): the console's (the stack sets it
 *   to the HTTP API's origin and those of `consoleCallbackUrls`).
 * - PROMPT_EXCERPT_CHARS (default 500, 0 keeps none): how many characters of a run's prompt its record
 *   keeps (its start), shown to whoever may see the run (GET /v1/runs/{runId}, the console's runs);
 *   the whole prompt's length and SHA-256 are kept either way.
 * - STREAM_HEARTBEAT_SECONDS (default 15 s): an SSE comment is sent when the event stream has been
 *   quiet this long, well under the idle limits of what serves it (a Lambda function URL closes a
 *   response idle for longer than its function's timeout; proxies and browsers often cut at 30-60 s).
 * - STREAM_MAX_SECONDS (default 840 s = 14 min): how long one event stream stays open; it then ends
 *   with a `retry:` hint and the client resumes with Last-Event-ID. Also cut to the Lambda's remaining
 *   time minus DEADLINE_RESERVE_MS, so it ends before the platform's limit (the streaming function's
 *   15-minute timeout; 29 s behind the HTTP API).
 * - STREAM_RETRY_MS (default 1000 ms): the `retry:` hint, how long a client waits before reconnecting.
 * - STREAM_RUN_TIMEOUT_MS (default 600000 ms = 10 min, at most 15 min): RUN_TIMEOUT_MS of a synchronous
 *   run on the streaming function (functions/stream/handler.ts), whose 15-minute timeout lifts the HTTP
 *   API's 29 s; the deadline still follows the invocation's remaining time.
 * - EVENTS_POLL_MS (default 1000 ms): how often a stream reads the table for new events of a run served
 *   by another function (the durable runner); events of a run in the same process arrive at once.
 * - SYSTEM_PROMPT (default: the accounting assistant's, shared/agent/run-state.ts DEFAULT_SYSTEM_PROMPT):
 *   the system message of every run, for a deployment that replaces the accounting domain; at most
 *   {@link MAX_SYSTEM_PROMPT_CHARS} characters, leading and trailing white space trimmed.
 * - APPROVAL_RULES (default none): which tool calls wait for a person's approval, see {@link ApprovalRules}.
 * - JWT_ISSUER, JWT_JWKS_URL, JWT_JWKS, MCP_RESOURCE_URL: how `/mcp` verifies bearer tokens itself (it
 *   is an OAuth 2.1 resource server, docs/mcp.md): the issuer the API's JWT authorizer trusts, its key
 *   set (a URL, default `<issuer>/.well-known/jwks.json`, or inline keys), and the canonical URL of the
 *   endpoint that tokens must name as their audience (unset: this request's own origin + `/mcp`).
 * - APPROVAL_TIMEOUT_SECONDS (default 86400 s = 24 h, the issue's default): how long an approval waits
 *   for a decision before the call gets business_error APPROVAL_EXPIRED. At most 30 days (an approval
 *   must be decided within the run records' retention: RUN_TTL_SECONDS must exceed it, checked at cold
 *   start by {@link crossFieldProblems}).
 * - TRACING (default off): OpenTelemetry traces of every run (docs/tracing.md). off loads no SDK code;
 *   otlp exports OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; console prints spans; adot leaves export to
 *   an ADOT Lambda layer (the deploy setting `tracing` sets it).
 * - OTEL_EXPORTER_OTLP_ENDPOINT (default http://127.0.0.1:4318, the OTLP/HTTP port of a local
 *   collector): where TRACING=otlp sends spans (`/v1/traces` is appended), the standard variable's name.
 * - TRACE_CONTENT (default false): puts prompts, answers, tool arguments and results on spans (the GenAI
 *   conventions' opt-in attributes). Off, spans carry names, ids, counts and codes only.
 */
export const ConfigSchema = z.object({
  MODEL_PROVIDER: z._default(z.enum(["openai-compatible", "bedrock"]), "openai-compatible"),
  BEDROCK_MODEL_ID: z._default(
    z.string().check(z.regex(BEDROCK_MODEL_ID_PATTERN, BEDROCK_MODEL_ID_RULE)),
    DEFAULT_BEDROCK_MODEL_ID,
  ),
  BEDROCK_BASE_URL: optionalUrl,
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalUrl,
  OPENAI_MODEL: z._default(z.string().check(z.minLength(1)), "gpt-4o-mini"),
  SYSTEM_PROMPT: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(MAX_SYSTEM_PROMPT_CHARS)))),
  MODEL_MAX_TOKENS: positiveInt(4_096, 1_000_000),
  TABLE_NAME: z._default(z.string().check(z.minLength(3), z.maxLength(255)), "boundloop"),
  DYNAMODB_ENDPOINT: optionalUrl,
  AWS_REGION: z._default(z.string().check(z.minLength(1)), "us-east-1"),
  MAX_CYCLES: positiveInt(5, 50),
  RUN_TIMEOUT_MS: positiveInt(25_000, 900_000),
  ASYNC_RUN_TIMEOUT_MS: positiveInt(600_000, 31_536_000_000),
  DURABLE_EXECUTION_TIMEOUT_SECONDS: positiveInt(900, 31_536_000),
  RUNNER_FUNCTION_ARN: z.pipe(
    optionalString,
    z.optional(
      z
        .string()
        .check(
          z.regex(
            /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+:[A-Za-z0-9_$-]+$/,
            "must be a qualified Lambda function ARN (function:name:alias)",
          ),
        ),
    ),
  ),
  APPROVAL_RULES: ApprovalRules,
  APPROVAL_TIMEOUT_SECONDS: positiveInt(86_400, 30 * 86_400),
  JWT_ISSUER: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(2048)))),
  JWT_JWKS_URL: optionalUrl,
  JWT_JWKS: InlineJwks,
  MCP_RESOURCE_URL: optionalUrl,
  DEADLINE_RESERVE_MS: envInt(1_500, 0, 60_000),
  QUOTE_TTL_SECONDS: envInt(900, 60, 86_400),
  MAX_TOTAL_TOKENS: positiveInt(100_000, 10_000_000),
  MAX_TOOL_CALLS_PER_TURN: positiveInt(8, 128),
  MAX_TOOL_CALLS_PER_RUN: positiveInt(20, 1_000),
  MAX_PARALLEL_TOOL_CALLS: positiveInt(4, 64),
  MAX_TOOL_RESULT_BYTES: positiveInt(16_384, 1_048_576),
  LOOP_BREAKER_THRESHOLD: positiveInt(2, 20),
  SUMMARIZE_ON_MAX_CYCLES: envBoolean(false),
  IDEMPOTENCY_TTL_SECONDS: positiveInt(86_400, 31_536_000),
  IDEMPOTENCY_KEY_REQUIRED: envBoolean(false),
  OPENAI_API_KEY_SECRET_NAME: z.pipe(
    optionalString,
    z.optional(
      z
        .string()
        .check(z.regex(/^[A-Za-z0-9/_+=.@:-]{1,2048}$/, "must be a Secrets Manager secret name or ARN")),
    ),
  ),
  SECRET_CACHE_SECONDS: envInt(300, 0, 86_400),
  TENANT_CLAIMS: claimList("tenant_id,custom:tenant_id"),
  PERMISSION_CLAIMS: claimList("scope,permissions,cognito:groups"),
  IAM_PRINCIPAL_TENANTS: IamPrincipalTenants,
  RUN_TTL_SECONDS: envInt(30 * 86_400, 3_600, 3_650 * 86_400),
  HISTORY_MAX_TOKENS: envInt(8_000, 0, 1_000_000),
  MAX_BODY_BYTES: envInt(65_536, 1_024, 6 * 1024 * 1024),
  DYNAMODB_REQUEST_TIMEOUT_MS: positiveInt(3_000, 60_000),
  TRACING: z._default(z.enum(["off", "otlp", "console", "adot"]), "off"),
  OTEL_EXPORTER_OTLP_ENDPOINT: z._default(z.url({ protocol: /^https?$/ }), "http://127.0.0.1:4318"),
  TRACE_CONTENT: envBoolean(false),
  JWT_AUDIENCE: z.pipe(
    optionalString,
    z.transform((value) =>
      (value ?? "")
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item.length > 0),
    ),
  ),
  CONSOLE_CLIENT_ID: optionalString,
  CONSOLE_STREAM_URL: z.pipe(optionalString, z.optional(z.url({ protocol: /^https?$/ }))),
  CONSOLE_ORIGINS: z.pipe(
    optionalString,
    z.pipe(
      z.transform((value: string | undefined) =>
        (value ?? "")
          .split(",")
          .map((item) => item.trim())
          .filter((item) => item.length > 0),
      ),
      z.array(z.string().check(z.refine(isOrigin, "must be origins: scheme://host[:port], no path"))),
    ),
  ),
  PROMPT_EXCERPT_CHARS: envInt(500, 0, 8_000),
  STREAM_HEARTBEAT_SECONDS: positiveInt(15, 240),
  STREAM_MAX_SECONDS: positiveInt(840, 3_600),
  STREAM_RETRY_MS: positiveInt(1_000, 60_000),
  STREAM_RUN_TIMEOUT_MS: positiveInt(600_000, 900_000),
  EVENTS_POLL_MS: envInt(1_000, 50, 60_000),
  POWERTOOLS_SERVICE_NAME: boundedName("boundloop"),
  POWERTOOLS_METRICS_NAMESPACE: boundedName("boundloop"),
  POWERTOOLS_LOG_LEVEL: z.pipe(
    z.pipe(
      z._default(z.string(), "INFO"),
      z.transform((value) => value.trim().toUpperCase()),
    ),
    z.enum(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "SILENT"]),
  ),
});

/** The parsed environment, see {@link ConfigSchema}. */
export type RawConfig = z.infer<typeof ConfigSchema>;

/**
 * Service configuration in the shapes the code uses.
 * - `model`: which provider (`provider`); for `openai-compatible` the endpoint, model name and key
 *   (`apiKey` undefined means "no key configured"); for `bedrock` the model id, the endpoint
 *   (`bedrockBaseUrl(region)` unless BEDROCK_BASE_URL overrides it) and the Region the keys are made for;
 *   `maxTokens`, the completion limit (tokens) sent with every request, on either provider.
 * - `table`: DynamoDB table name and optional endpoint override (DynamoDB Local, dynalite).
 * - `quotes`: `ttlSeconds`, seconds a tax quote stays usable by recordInvoice.
 * - `limits`: the server's caps for a run ({@link RunLimits}: a request may lower them through
 *   `clampRunLimits`, never raise them), plus `deadlineReserveMs` (ms kept back for persisting the outcome).
 * - `idempotency`: `ttlSeconds` (record retention, s) and `keyRequired` (Idempotency-Key header mandatory).
 * - `identity`: claim names and the IAM principal → tenant mapping (see shared/identity.ts).
 * - `runs`: audit trail retention (`ttlSeconds`) and how much of a prompt a run record keeps
 *   (`promptExcerptChars`, characters).
 * - `history`: `maxTokens`, the estimated-token cap on the conversation a continuing run carries.
 * - `http`: request body cap in bytes.
 * - `stream`: the run event streams (docs/run-events.md), all in ms: heartbeat interval, longest stream,
 *   the `retry:` hint, and the table poll interval.
 * - `durable`: runs beyond one request (docs/durable-runs.md): `runTimeoutMs`, the cap of a durable run's
 *   wall time in ms (ASYNC_RUN_TIMEOUT_MS capped by the execution timeout minus DEADLINE_RESERVE_MS);
 *   `runnerFunctionArn`, the runner alias (undefined outside AWS).
 * - `approvals`: human approval (docs/approvals.md): `rules`, per tool the per-currency thresholds
 *   (decimal strings, major units; `{}` means no approvals), and `timeoutSeconds`, how long an approval
 *   waits for its decision.
 * - `prompts`: `system`, the runs' system prompt (undefined: the loop's default).
 * - `mcp`: how `/mcp` verifies bearer tokens (docs/mcp.md): `issuer` (undefined: /mcp refuses every
 *   token), `jwksUrl` (undefined: `<issuer>/.well-known/jwks.json`), `jwks` (inline keys; used instead of
 *   the URL when set), `resourceUrl` (the audience tokens must carry; undefined: the request's origin +
 *   `/mcp`).
 * - `observability`: Powertools service name, metrics namespace, log level.
 * - `tracing`: OpenTelemetry traces (docs/tracing.md): `mode` off, otlp (the in-bundle SDK exporting
 *   OTLP/HTTP to `otlpEndpoint`, flushed before each invocation ends), console, or adot (an ADOT Lambda
 *   layer's SDK is registered; boundloop only emits spans); `captureContent`, the opt-in prompt, answer
 *   and tool argument attributes.
 */
export interface Config {
  model: {
    provider: ModelProvider;
    bedrock: { modelId: string; baseURL: string; region: string };
    apiKey: string | undefined;
    apiKeySecretName: string | undefined;
    secretCacheSeconds: number;
    baseURL: string | undefined;
    name: string;
    maxTokens: number;
  };
  table: { name: string; endpoint: string | undefined; region: string; requestTimeoutMs: number };
  quotes: { ttlSeconds: number };
  limits: RunLimits & { deadlineReserveMs: number };
  idempotency: { ttlSeconds: number; keyRequired: boolean };
  identity: {
    /** The token issuer and audiences the streaming entry verifies (undefined / [] outside it). */
    jwt: { issuer: string | undefined; audience: string[] };
    tenantClaims: string[];
    permissionClaims: string[];
    iamPrincipals: Record<string, { tenantId: string; permissions: string[] }>;
  };
  runs: { ttlSeconds: number; promptExcerptChars: number };
  /**
   * The console: its OIDC sign-in, issuer (JWT_ISSUER) and client id (both set or it takes a pasted
   * token); `streamUrl`, the streaming function URL it follows events on (undefined: its own origin);
   * `origins`, the origins whose pages may call the streaming function (CORS).
   */
  console: {
    issuer: string | undefined;
    clientId: string | undefined;
    streamUrl: string | undefined;
    origins: string[];
  };
  history: { maxTokens: number };
  http: { maxBodyBytes: number };
  stream: { heartbeatMs: number; maxMs: number; retryMs: number; pollMs: number; runTimeoutMs: number };
  durable: { runTimeoutMs: number; runnerFunctionArn: string | undefined };
  approvals: { rules: ApprovalRulesConfig; timeoutSeconds: number };
  prompts: { system: string | undefined };
  mcp: {
    issuer: string | undefined;
    jwksUrl: string | undefined;
    jwks: { keys: Record<string, unknown>[] } | undefined;
    resourceUrl: string | undefined;
  };
  observability: { serviceName: string; metricsNamespace: string; logLevel: ObservabilityLogLevel };
  tracing: { mode: TracingMode; otlpEndpoint: string; captureContent: boolean };
}

/** TRACING: where spans go (see {@link Config}.tracing). */
export type TracingMode = RawConfig["TRACING"];

/** MODEL_PROVIDER: `openai-compatible` (OPENAI_* settings) or `bedrock` (BEDROCK_* settings). */
export type ModelProvider = RawConfig["MODEL_PROVIDER"];

/**
 * Bedrock's OpenAI-compatible endpoint of a Region: bedrock-runtime's `/openai/v1` (chosen over
 * bedrock-mantle: see docs/deploy.md "Use Bedrock").
 */
export function bedrockBaseUrl(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com/openai/v1`;
}

/** APPROVAL_RULES parsed: tool name → ISO 4217 currency → threshold (decimal string, major units). */
export type ApprovalRulesConfig = RawConfig["APPROVAL_RULES"];

/** Log levels Powertools Logger accepts (POWERTOOLS_LOG_LEVEL). */
export type ObservabilityLogLevel = RawConfig["POWERTOOLS_LOG_LEVEL"];

/** Raised at cold start when the environment does not satisfy {@link ConfigSchema}. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * The rules between settings that each pass on its own, checked at cold start (and at synth, which
 * parses the same environment), one sentence per broken rule:
 * - OPENAI_API_KEY and OPENAI_API_KEY_SECRET_NAME are exclusive;
 * - RUN_TTL_SECONDS must exceed APPROVAL_TIMEOUT_SECONDS and DURABLE_EXECUTION_TIMEOUT_SECONDS: a run's
 *   record lives RUN_TTL_SECONDS from its start, and a durable run (paused for an approval up to
 *   APPROVAL_TIMEOUT_SECONDS, within its execution timeout) still writes its outcome to it at the end.
 */
function crossFieldProblems(raw: RawConfig): string[] {
  const problems: string[] = [];
  if (raw.OPENAI_API_KEY && raw.OPENAI_API_KEY_SECRET_NAME) {
    problems.push("set OPENAI_API_KEY (local) or OPENAI_API_KEY_SECRET_NAME (AWS), not both.");
  }
  if (raw.MODEL_PROVIDER === "bedrock" && (raw.OPENAI_API_KEY || raw.OPENAI_API_KEY_SECRET_NAME)) {
    problems.push(
      "MODEL_PROVIDER=bedrock signs in with the function's AWS credentials; unset OPENAI_API_KEY and OPENAI_API_KEY_SECRET_NAME.",
    );
  }
  const ttl = raw.RUN_TTL_SECONDS;
  for (const [name, seconds, why] of [
    ["APPROVAL_TIMEOUT_SECONDS", raw.APPROVAL_TIMEOUT_SECONDS, "a run paused for approval"],
    ["DURABLE_EXECUTION_TIMEOUT_SECONDS", raw.DURABLE_EXECUTION_TIMEOUT_SECONDS, "a durable run"],
  ] as const) {
    if (ttl <= seconds) {
      problems.push(
        `RUN_TTL_SECONDS (${ttl} s) must exceed ${name} (${seconds} s): ${why} would outlive its run record, and its outcome would be lost.`,
      );
    }
  }
  return problems;
}

/**
 * Parses the environment into a {@link Config}.
 * @param env a process.env-like record (defaults to `process.env`)
 * @throws ConfigError naming every invalid variable and why, or every rule between variables broken
 *   (see {@link crossFieldProblems})
 * @example loadConfig({ TABLE_NAME: "boundloop-dev", MAX_CYCLES: "3" })
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const raw = parsed.data;
  const conflicts = crossFieldProblems(raw);
  if (conflicts.length > 0) throw new ConfigError(`Invalid configuration: ${conflicts.join("; ")}`);
  return configOf(raw);
}

/** The model provider's settings of a parsed environment. */
function modelConfigOf(raw: z.output<typeof ConfigSchema>): Config["model"] {
  return {
    provider: raw.MODEL_PROVIDER,
    bedrock: {
      modelId: raw.BEDROCK_MODEL_ID,
      baseURL: raw.BEDROCK_BASE_URL ?? bedrockBaseUrl(raw.AWS_REGION),
      region: raw.AWS_REGION,
    },
    apiKey: raw.OPENAI_API_KEY,
    apiKeySecretName: raw.OPENAI_API_KEY_SECRET_NAME,
    secretCacheSeconds: raw.SECRET_CACHE_SECONDS,
    baseURL: raw.OPENAI_BASE_URL,
    name: raw.OPENAI_MODEL,
    maxTokens: raw.MODEL_MAX_TOKENS,
  };
}

/** A parsed environment (every variable valid, the cross-field rules kept) in the shapes of {@link Config}. */
function configOf(raw: z.output<typeof ConfigSchema>): Config {
  return {
    model: modelConfigOf(raw),
    table: {
      name: raw.TABLE_NAME,
      endpoint: raw.DYNAMODB_ENDPOINT,
      region: raw.AWS_REGION,
      requestTimeoutMs: raw.DYNAMODB_REQUEST_TIMEOUT_MS,
    },
    limits: {
      maxCycles: raw.MAX_CYCLES,
      runTimeoutMs: raw.RUN_TIMEOUT_MS,
      deadlineReserveMs: raw.DEADLINE_RESERVE_MS,
      maxTotalTokens: raw.MAX_TOTAL_TOKENS,
      maxToolCallsPerTurn: raw.MAX_TOOL_CALLS_PER_TURN,
      maxToolCallsPerRun: raw.MAX_TOOL_CALLS_PER_RUN,
      maxConcurrentToolCalls: raw.MAX_PARALLEL_TOOL_CALLS,
      maxToolResultBytes: raw.MAX_TOOL_RESULT_BYTES,
      loopBreakerThreshold: raw.LOOP_BREAKER_THRESHOLD,
      summarizeOnMaxCycles: raw.SUMMARIZE_ON_MAX_CYCLES,
    },
    quotes: { ttlSeconds: raw.QUOTE_TTL_SECONDS },
    idempotency: { ttlSeconds: raw.IDEMPOTENCY_TTL_SECONDS, keyRequired: raw.IDEMPOTENCY_KEY_REQUIRED },
    identity: {
      jwt: { issuer: raw.JWT_ISSUER, audience: raw.JWT_AUDIENCE },
      tenantClaims: raw.TENANT_CLAIMS,
      permissionClaims: raw.PERMISSION_CLAIMS,
      iamPrincipals: raw.IAM_PRINCIPAL_TENANTS,
    },
    runs: { ttlSeconds: raw.RUN_TTL_SECONDS, promptExcerptChars: raw.PROMPT_EXCERPT_CHARS },
    console: {
      issuer: raw.JWT_ISSUER,
      clientId: raw.CONSOLE_CLIENT_ID,
      streamUrl: raw.CONSOLE_STREAM_URL?.replace(/\/$/, ""),
      origins: raw.CONSOLE_ORIGINS,
    },
    history: { maxTokens: raw.HISTORY_MAX_TOKENS },
    http: { maxBodyBytes: raw.MAX_BODY_BYTES },
    stream: {
      heartbeatMs: raw.STREAM_HEARTBEAT_SECONDS * 1000,
      maxMs: raw.STREAM_MAX_SECONDS * 1000,
      retryMs: raw.STREAM_RETRY_MS,
      pollMs: raw.EVENTS_POLL_MS,
      runTimeoutMs: raw.STREAM_RUN_TIMEOUT_MS,
    },
    durable: {
      runTimeoutMs: Math.max(
        1,
        Math.min(
          raw.ASYNC_RUN_TIMEOUT_MS,
          raw.DURABLE_EXECUTION_TIMEOUT_SECONDS * 1000 - raw.DEADLINE_RESERVE_MS,
        ),
      ),
      runnerFunctionArn: raw.RUNNER_FUNCTION_ARN,
    },
    approvals: { rules: raw.APPROVAL_RULES, timeoutSeconds: raw.APPROVAL_TIMEOUT_SECONDS },
    prompts: { system: raw.SYSTEM_PROMPT },
    mcp: {
      issuer: raw.JWT_ISSUER,
      jwksUrl: raw.JWT_JWKS_URL,
      jwks: "keys" in raw.JWT_JWKS ? (raw.JWT_JWKS as { keys: Record<string, unknown>[] }) : undefined,
      resourceUrl: raw.MCP_RESOURCE_URL,
    },
    observability: {
      serviceName: raw.POWERTOOLS_SERVICE_NAME,
      metricsNamespace: raw.POWERTOOLS_METRICS_NAMESPACE,
      logLevel: raw.POWERTOOLS_LOG_LEVEL,
    },
    tracing: {
      mode: raw.TRACING,
      otlpEndpoint: raw.OTEL_EXPORTER_OTLP_ENDPOINT,
      captureContent: raw.TRACE_CONTENT,
    },
  };
}

/**
 * The configuration of an empty environment: every default of {@link ConfigSchema}, in the shapes of
 * {@link Config}. Code that needs a default (the stack's Powertools names, identity without a Config)
 * reads it here, so each default is written once, in the schema.
 */
export const CONFIG_DEFAULTS: Config = loadConfig({});
