/**
 * Amazon Bedrock behind the same openai client and {@link OpenAIChatModel} as every other provider:
 * Bedrock's OpenAI-compatible Chat Completions endpoint (bedrock-runtime `/openai/v1`), signed in with
 * short-term Bedrock API keys that the function makes itself from its own AWS credentials (the Lambda
 * role's), so there is no key to create, store or rotate.
 *
 * A short-term key is a SigV4-presigned `POST https://bedrock.amazonaws.com/?Action=CallWithBearerToken`
 * (service `bedrock`, the function's Region), base64-encoded behind the prefix `bedrock-api-key-`, made
 * locally as AWS's @aws/bedrock-token-generator makes it (./bedrock-key.ts): no network call. It is valid until `X-Amz-Date +
 * X-Amz-Expires`, and never after the credentials that signed it expire
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-how.html).
 */
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import type { ClientOptions } from "openai";
import { APIError } from "openai/core/error";
import { BEDROCK_KEY_PREFIX, makeBedrockKey } from "./bedrock-key.js";

export { BEDROCK_KEY_PREFIX };

/**
 * How long each key is made for: 15 minutes. Making one is a few HMACs (no I/O), so a short life costs
 * nothing and bounds what a leaked key could do; the maximum is 12 h (MAX_BEDROCK_KEY_LIFETIME_SECONDS).
 */
export const BEDROCK_KEY_LIFETIME_SECONDS = 900;

/**
 * A key is renewed when less than this is left of it: 60 s, far more than the time between reading the
 * key and Bedrock checking it (the SDK reads it again before every attempt, retries included).
 */
export const BEDROCK_KEY_RENEW_BEFORE_SECONDS = 60;

/** Raised (and caught by the model adapter) when no key could be made; the message is fixed, the cause kept for logs. */
export class BedrockKeyError extends Error {
  constructor(options: { cause?: unknown } = {}) {
    super("Could not make a Bedrock API key from the function's AWS credentials.", options);
    this.name = new.target.name;
  }
}

/** What {@link BedrockApiKeys} needs. `now` is the clock (epoch ms), injected by tests. */
export interface BedrockApiKeyOptions {
  credentials: AwsCredentialIdentityProvider;
  region: string;
  now?: () => number;
  lifetimeSeconds?: number;
  renewBeforeSeconds?: number;
}

/**
 * The facts a Bedrock API key carries (decoded, nothing verified): the presigned request's host, query
 * parameters, and when it expires (epoch ms).
 * @throws Error when `key` is not a Bedrock API key
 */
export function decodeBedrockKey(key: string): {
  host: string;
  path: string;
  query: URLSearchParams;
  signedAt: number;
  expiresAt: number;
} {
  if (!key.startsWith(BEDROCK_KEY_PREFIX)) throw new Error("not a Bedrock API key");
  const url = new URL(
    `https://${Buffer.from(key.slice(BEDROCK_KEY_PREFIX.length), "base64").toString("utf8")}`,
  );
  const date = url.searchParams.get("X-Amz-Date") ?? "";
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  const expires = Number(url.searchParams.get("X-Amz-Expires"));
  if (!match || !Number.isInteger(expires)) throw new Error("not a Bedrock API key");
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  const signedAt = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s);
  return {
    host: url.host,
    path: url.pathname,
    query: url.searchParams,
    signedAt,
    expiresAt: signedAt + expires * 1000,
  };
}

/**
 * The function's Bedrock API keys: one key at a time, cached, renewed once less than `renewBeforeSeconds`
 * is left of it (by the injected clock), so no request goes out with a key about to expire. Concurrent
 * callers share one renewal. A failed renewal is not cached: the next call tries again.
 * The key is a credential: it is returned to the openai client only, never logged or recorded.
 */
export class BedrockApiKeys {
  private current: { key: string; expiresAt: number } | undefined;
  private pending: Promise<string> | undefined;
  private readonly now: () => number;
  private readonly lifetimeSeconds: number;
  private readonly renewBeforeMs: number;

  constructor(private readonly options: BedrockApiKeyOptions) {
    this.now = options.now ?? Date.now;
    this.lifetimeSeconds = options.lifetimeSeconds ?? BEDROCK_KEY_LIFETIME_SECONDS;
    this.renewBeforeMs = (options.renewBeforeSeconds ?? BEDROCK_KEY_RENEW_BEFORE_SECONDS) * 1000;
  }

  /**
   * A key with more than `renewBeforeSeconds` left.
   * @throws BedrockKeyError when the credentials cannot be read, or expire within `renewBeforeSeconds`
   */
  async get(): Promise<string> {
    const current = this.current;
    if (current && this.now() < current.expiresAt - this.renewBeforeMs) return current.key;
    this.pending ??= this.make().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async make(): Promise<string> {
    let credentials: AwsCredentialIdentity;
    let key: string;
    try {
      credentials = await this.options.credentials();
      key = await makeBedrockKey({
        credentials,
        region: this.options.region,
        expiresInSeconds: this.lifetimeSeconds,
        signedAt: this.now(),
      });
    } catch (error) {
      throw new BedrockKeyError({ cause: error });
    }
    const expiresAt = Math.min(
      decodeBedrockKey(key).expiresAt,
      credentials.expiration?.getTime() ?? Number.POSITIVE_INFINITY,
    );
    if (this.now() >= expiresAt - this.renewBeforeMs) {
      throw new BedrockKeyError({ cause: new Error("the AWS credentials expire too soon to sign a key") });
    }
    this.current = { key, expiresAt };
    return key;
  }
}

/**
 * A Bedrock refusal, as the client sees it: a stable `code` and a fixed sentence (`message`) naming only
 * the configured model and Region; what Bedrock said goes to `detail`, for the logs only.
 * - MODEL_THROTTLED (429 ThrottlingException, after the SDK's retries within the deadline)
 * - MODEL_ACCESS_DENIED (403: the account has no access to the model: turn it on in the console)
 * - MODEL_NOT_PERMITTED (403: the function's role may not invoke the model)
 * - MODEL_AUTH_FAILED (401/403: Bedrock did not accept the key)
 * - MODEL_NOT_FOUND (404, or 400 naming the model identifier: the endpoint does not serve that model)
 * - MODEL_REQUEST_INVALID (another 400/422 ValidationException)
 * - MODEL_SERVICE_ERROR (5xx: InternalServerException, ServiceUnavailableException, ModelNotReady, …)
 * - MODEL_KEY_UNAVAILABLE (no key could be made: {@link BedrockKeyError}; the next call tries again)
 */
export interface BedrockFailure {
  code:
    | "MODEL_THROTTLED"
    | "MODEL_ACCESS_DENIED"
    | "MODEL_NOT_PERMITTED"
    | "MODEL_AUTH_FAILED"
    | "MODEL_NOT_FOUND"
    | "MODEL_REQUEST_INVALID"
    | "MODEL_SERVICE_ERROR"
    | "MODEL_KEY_UNAVAILABLE";
  message: string;
  detail: string;
}

type Fetch = NonNullable<ClientOptions["fetch"]>;

/**
 * Wraps the model client's fetch for Bedrock: an error answer in AWS's REST-JSON shape (status,
 * `x-amzn-ErrorType`, `{"message"}` or `{"Message"}`) is handed to the SDK in OpenAI's shape,
 * `{"error":{"message","type","code"}}` with the error type as `type` and `code`, because the SDK reads
 * only an `error` member and would otherwise drop what Bedrock said (needed to tell "no model access"
 * from "the role may not invoke", and to recognise a context-window refusal). Other answers pass as they are.
 */
export function bedrockFetch(fetch: Fetch): Fetch {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (response.ok) return response;
    const text = await response.text();
    let body: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed))
        body = parsed as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    const message = body?.message ?? body?.Message;
    const rewrite = body !== undefined && body.error === undefined && typeof message === "string";
    const type = response.headers.get("x-amzn-errortype")?.split(":")[0] ?? null;
    return new Response(rewrite ? JSON.stringify({ error: { message, type, code: type } }) : text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    }) as Awaited<ReturnType<Fetch>>;
  };
}

/** The error type Bedrock names: the `x-amzn-ErrorType` header (before any `:`), else the body's `type`/`__type`. */
function errorTypeOf(error: APIError): string {
  const header = error.headers?.get("x-amzn-errortype");
  if (header) return header.split(":")[0] ?? "";
  const body = (error.error ?? {}) as { type?: unknown; __type?: unknown };
  const type = body.type ?? body.__type;
  return typeof type === "string" ? (type.split("#").at(-1) ?? "") : "";
}

/**
 * Classifies a failed Bedrock call (error shapes: AWS's REST-JSON errors, status + `x-amzn-ErrorType` +
 * `{"message"}` / `{"Message"}`, and OpenAI-shaped `{"error":{…}}` bodies). Connection errors, aborts and
 * 2xx oddities are left to the adapter's generic handling (undefined).
 * @param model the configured model id; `region` the Region, both named in the fixed sentences
 */
export function classifyBedrockFailure(
  error: unknown,
  model: string,
  region: string,
): BedrockFailure | undefined {
  if (error instanceof Error && error.cause instanceof BedrockKeyError) error = error.cause;
  if (error instanceof BedrockKeyError) {
    const cause =
      error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : String(error.cause);
    return {
      code: "MODEL_KEY_UNAVAILABLE",
      message: `${error.message} Retry shortly.`,
      detail: cause,
    };
  }
  if (!(error instanceof APIError) || error.status === undefined) return undefined;
  const status = error.status;
  const type = errorTypeOf(error);
  const detail = `HTTP ${status} ${type || "(no error type)"}: ${error.message}`;
  const text = error.message.toLowerCase();
  const failure = (code: BedrockFailure["code"], message: string): BedrockFailure => ({
    code,
    message,
    detail,
  });
  if (status === 429 || type === "ThrottlingException") {
    return failure(
      "MODEL_THROTTLED",
      `Amazon Bedrock is throttling calls to ${model} in ${region}; retry later, or ask for a higher quota in Service Quotas.`,
    );
  }
  if (status === 401 || status === 403) {
    if (text.includes("not authorized to perform")) {
      return failure(
        "MODEL_NOT_PERMITTED",
        `The function's role may not invoke ${model} in ${region}; deploy with -c bedrockModelId=<the model to use>.`,
      );
    }
    if (type === "AccessDeniedException" || text.includes("access to the model")) {
      return failure(
        "MODEL_ACCESS_DENIED",
        `This AWS account has no access to ${model} in ${region}: enable it in the Amazon Bedrock console (Model access, or accept the model's offer in the Model catalog) for ${region}, then retry.`,
      );
    }
    return failure(
      "MODEL_AUTH_FAILED",
      "Amazon Bedrock did not accept the function's API key; retry shortly.",
    );
  }
  if (
    status === 404 ||
    type === "ResourceNotFoundException" ||
    (status === 400 && /model (identifier|id)/.test(text))
  ) {
    return failure(
      "MODEL_NOT_FOUND",
      `Amazon Bedrock's Chat Completions endpoint in ${region} does not serve ${model}; choose a model id it serves (docs/deploy.md "Use Bedrock").`,
    );
  }
  if (status >= 500) {
    return failure(
      "MODEL_SERVICE_ERROR",
      `Amazon Bedrock failed to answer for ${model} (HTTP ${status}); retry later.`,
    );
  }
  if (status >= 400) {
    return failure(
      "MODEL_REQUEST_INVALID",
      `Amazon Bedrock rejected the request to ${model} as invalid (HTTP ${status}).`,
    );
  }
  return undefined;
}
