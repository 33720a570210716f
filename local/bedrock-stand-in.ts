import { timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity } from "@smithy/types";
import { BEDROCK_KEY_PREFIX, decodeBedrockKey } from "../shared/model/bedrock.js";
import { type LocalModelServer, startModelServer } from "./model-server.js";

/**
 * A Bedrock refusal the stand-in answers with on purpose (the next chat-completions request takes the
 * next one): throttling (429 ThrottlingException), no model access (403 AccessDeniedException), the
 * role not allowed to invoke (403 AccessDeniedException "not authorized to perform"), a validation error
 * (400 ValidationException) and service errors (500 InternalServerException, 503 ServiceUnavailableException).
 */
export type BedrockFault =
  | "throttled"
  | "noModelAccess"
  | "notAuthorized"
  | "validation"
  | "internal"
  | "unavailable";

/** A key the stand-in saw, decoded (never the key itself): who signed it, when, and whether it passed. */
export interface SeenKey {
  accessKeyId: string;
  signedAt: number;
  expiresAt: number;
  /** The stand-in's clock when the request came (epoch ms). */
  receivedAt: number;
  /** null when the key was accepted, else the refusal's error type. */
  refused: string | null;
}

/** A running stand-in: `baseURL` is its `/openai/v1`, as Bedrock's; `model` the local model server behind it. */
export interface BedrockStandIn {
  baseURL: string;
  model: LocalModelServer;
  /** Every key presented, in order. */
  keys: SeenKey[];
  /** Answers the next chat-completions requests with these refusals, one each, before any answer. */
  fault(faults: BedrockFault[]): void;
  stop(): Promise<void>;
}

/**
 * What the stand-in checks keys against, as Bedrock would: the `credentials` the function's environment
 * holds, its `region`, the models the account may use (`models`: access granted; see
 * {@link modelRefusal} for the others), and its clock (`now`, epoch ms; default Date.now).
 */
export interface BedrockStandInOptions {
  credentials: AwsCredentialIdentity;
  region: string;
  models: string[];
  now?: () => number;
  /** Called after each answered chat completion with the count so far (tests move their clock here). */
  onAnswered?: (answered: number) => void;
}

/** A refusal: status, Bedrock's error type, its message, extra headers. */
type Refusal = [status: number, type: string, message: string, headers?: Record<string, string>];

const NO_ACCESS = "You don't have access to the model with the specified model ID.";

/** What Bedrock answers for each {@link BedrockFault} (its error types and messages). */
const FAULTS: Record<BedrockFault, (region: string, model: string) => Refusal> = {
  throttled: () => [
    429,
    "ThrottlingException",
    "Too many requests, please wait before trying again.",
    { "retry-after-ms": "10" },
  ],
  noModelAccess: () => [403, "AccessDeniedException", NO_ACCESS],
  notAuthorized: (region, model) => [
    403,
    "AccessDeniedException",
    `User: arn:aws:sts::123456789012:assumed-role/ApiFunctionRole/fn is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:${region}::foundation-model/${model} because no identity-based policy allows the bedrock:InvokeModel action`,
  ],
  validation: () => [
    400,
    "ValidationException",
    "Malformed input request: #: extraneous key [seed] is not permitted.",
  ],
  internal: () => [500, "InternalServerException", "The server encountered an internal error."],
  unavailable: () => [
    503,
    "ServiceUnavailableException",
    "The service is temporarily unable to handle the request.",
  ],
};

/**
 * The refusal of a model the account may not use: a versioned model id (`provider.name-v1:0`) not in
 * `models` is a real model without access (403); anything else an identifier Bedrock does not know (400).
 */
function modelRefusal(requested: string, models: readonly string[]): Refusal | undefined {
  if (models.includes(requested)) return undefined;
  return /^[a-z0-9-]+\.[a-z0-9][^:]*:\d+$/.test(requested)
    ? [403, "AccessDeniedException", NO_ACCESS]
    : [400, "ValidationException", "The provided model identifier is invalid."];
}

/** Bedrock's clock skew allowance for a presigned request signed in the future: 5 minutes. */
const MAX_FUTURE_SKEW_MS = 5 * 60_000;

/**
 * Starts a local stand-in of Bedrock's OpenAI-compatible endpoint (`POST /openai/v1/chat/completions`) on
 * 127.0.0.1, in front of the project's local model server (local/model-server.ts, which answers). Each
 * request must carry `Authorization: Bearer bedrock-api-key-…`, a short-term Bedrock API key that
 * {@link verifyBedrockKey} accepts for the configured credentials and Region; refusals have Bedrock's
 * shapes (status, `x-amzn-ErrorType`, `{"Message"}` / `{"message"}`). Nothing here reaches AWS.
 */
export async function startBedrockStandIn(options: BedrockStandInOptions): Promise<BedrockStandIn> {
  const model = await startModelServer();
  const now = options.now ?? Date.now;
  const keys: SeenKey[] = [];
  let faults: BedrockFault[] = [];
  let answered = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) refuse(res, 500, "InternalServerException", String(error));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const header = req.headers.authorization ?? "";
    if (!header) {
      refuse(res, 403, "MissingAuthenticationTokenException", "Missing Authentication Token");
      return;
    }
    const key = header.replace(/^Bearer\s+/i, "");
    const verdict = await verifyBedrockKey(key, options.credentials, options.region, now());
    keys.push(verdict.seen);
    if (verdict.refusal) {
      refuseKey(res, verdict.refusal);
      return;
    }
    if (req.method !== "POST" || req.url !== "/openai/v1/chat/completions") {
      refuse(res, 404, "UnknownOperationException", `No operation ${req.method} ${req.url}`);
      return;
    }
    const requested = String((JSON.parse(body.toString("utf8")) as { model?: unknown }).model);
    const fault = faults.shift();
    const refusal = fault
      ? FAULTS[fault](options.region, requested)
      : modelRefusal(requested, options.models);
    if (refusal) {
      refuse(res, ...refusal);
      return;
    }
    await forward(res, body);
  }

  /** Passes the request on to the local model server and its answer back, status and body as they are. */
  async function forward(res: ServerResponse, body: Buffer): Promise<void> {
    const answer = await fetch(`${model.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const text = await answer.text();
    res.writeHead(answer.status, {
      "content-type": "application/json",
      "x-amzn-requestid": crypto.randomUUID(),
    });
    res.end(text);
    answered += 1;
    options.onAnswered?.(answered);
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/openai/v1`,
    model,
    keys,
    fault(next) {
      faults = [...next];
    },
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, "close").catch(() => undefined);
      await model.stop();
    },
  };
}

/**
 * Bedrock's own answer to a key it does not accept: 403, its error type, and capital-M `{"Message"}` as
 * its authentication layer sends it.
 */
function refuseKey(res: ServerResponse, refusal: { type: string; message: string }): void {
  res.writeHead(403, {
    "content-type": "application/json",
    "x-amzn-errortype": `${refusal.type}:http://internal.amazon.com/coral/com.amazon.coral.service/`,
  });
  res.end(JSON.stringify({ Message: refusal.message }));
}

/** An AWS REST-JSON error: the status, `x-amzn-ErrorType`, and `{"message"}`. */
function refuse(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify({ message });
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * The signature Bedrock computes for a key's request: `POST bedrock.amazonaws.com/?Action=CallWithBearerToken`
 * presigned with `credentials` for service `bedrock` in `region`, valid `expiresIn` s from `signedAt` (epoch ms).
 */
async function expectedSignature(
  credentials: AwsCredentialIdentity,
  region: string,
  expiresIn: number,
  signedAt: number,
): Promise<string> {
  const signer = new SignatureV4({
    service: "bedrock",
    region,
    credentials,
    sha256: Hash.bind(null, "sha256"),
  });
  const presigned = await signer.presign(
    new HttpRequest({
      method: "POST",
      protocol: "https",
      hostname: "bedrock.amazonaws.com",
      headers: { host: "bedrock.amazonaws.com" },
      path: "/",
      query: { Action: "CallWithBearerToken" },
    }),
    { expiresIn, signingDate: new Date(signedAt) },
  );
  return String(presigned.query?.["X-Amz-Signature"] ?? "");
}

/**
 * Verifies a short-term Bedrock API key as Bedrock must: the prefix; a presigned `POST
 * bedrock.amazonaws.com/` for `Action=CallWithBearerToken`, `Version=1`, AWS4-HMAC-SHA256 signing only the
 * host; a credential scope of `credentials.accessKeyId`, the signing day, `region`, service `bedrock`; the
 * session token of `credentials`; a signature equal to the one recomputed from `credentials` with
 * @smithy/signature-v4 (the AWS SDK's signer) for the same request, date and expiry; and `now` within
 * [signed − 5 min, signed + X-Amz-Expires).
 * @returns the decoded key (`seen`) and, when refused, Bedrock's error type and message
 */
export async function verifyBedrockKey(
  key: string,
  credentials: AwsCredentialIdentity,
  region: string,
  now: number,
): Promise<{ seen: SeenKey; refusal?: { type: string; message: string } }> {
  const invalid = "Authentication failed: Please make sure your API Key is valid.";
  const seen: SeenKey = { accessKeyId: "", signedAt: 0, expiresAt: 0, receivedAt: now, refused: null };
  const refuseWith = (type: string, message: string) => {
    seen.refused = type;
    return { seen, refusal: { type, message } };
  };
  if (!key.startsWith(BEDROCK_KEY_PREFIX)) {
    return refuseWith("AccessDeniedException", "Invalid API Key format: Must start with pre-defined prefix");
  }
  let decoded: ReturnType<typeof decodeBedrockKey>;
  try {
    decoded = decodeBedrockKey(key);
  } catch {
    return refuseWith("AccessDeniedException", invalid);
  }
  const { query } = decoded;
  const [accessKeyId, day, scopeRegion, service, terminator] = (query.get("X-Amz-Credential") ?? "").split(
    "/",
  );
  Object.assign(seen, {
    accessKeyId: accessKeyId ?? "",
    signedAt: decoded.signedAt,
    expiresAt: decoded.expiresAt,
  });
  const amzDate = query.get("X-Amz-Date") ?? "";
  const wellFormed =
    decoded.host === "bedrock.amazonaws.com" &&
    decoded.path === "/" &&
    query.get("Action") === "CallWithBearerToken" &&
    query.get("Version") === "1" &&
    query.get("X-Amz-Algorithm") === "AWS4-HMAC-SHA256" &&
    query.get("X-Amz-SignedHeaders") === "host" &&
    service === "bedrock" &&
    terminator === "aws4_request" &&
    day === amzDate.slice(0, 8);
  if (!wellFormed) return refuseWith("AccessDeniedException", invalid);
  if (scopeRegion !== region) {
    return refuseWith(
      "AccessDeniedException",
      `${invalid} The key was made for ${scopeRegion}, not ${region}.`,
    );
  }
  if (
    accessKeyId !== credentials.accessKeyId ||
    (query.get("X-Amz-Security-Token") ?? undefined) !== credentials.sessionToken
  ) {
    return refuseWith(
      "UnrecognizedClientException",
      "The security token included in the request is invalid.",
    );
  }
  const expected = Buffer.from(
    await expectedSignature(credentials, region, Number(query.get("X-Amz-Expires")), decoded.signedAt),
  );
  const given = Buffer.from(query.get("X-Amz-Signature") ?? "");
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return refuseWith(
      "InvalidSignatureException",
      "The request signature we calculated does not match the signature you provided.",
    );
  }
  if (now >= decoded.expiresAt) return refuseWith("AccessDeniedException", "Bearer Token has expired");
  if (decoded.signedAt - now > MAX_FUTURE_SKEW_MS) {
    return refuseWith("AccessDeniedException", "Signature not yet current");
  }
  return { seen };
}
