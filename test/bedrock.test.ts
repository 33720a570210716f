import { getToken } from "@aws/bedrock-token-generator/dist/getToken.js";
import type { AwsCredentialIdentity } from "@smithy/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type BedrockStandIn, startBedrockStandIn, verifyBedrockKey } from "../local/bedrock-stand-in.js";
import { ConfigError, loadConfig } from "../shared/config.js";
import { BedrockApiKeys, BedrockKeyError, decodeBedrockKey } from "../shared/model/bedrock.js";
import { makeBedrockKey } from "../shared/model/bedrock-key.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

/** The function's credentials, as Lambda puts the role's into its environment (fixed test values). */
const FUNCTION_CREDENTIALS: AwsCredentialIdentity = {
  accessKeyId: "ASIAFUNCTIONROLE0001",
  secretAccessKey: "functionRoleSecretAccessKeyForTests000000",
  sessionToken: "functionRoleSessionTokenForTests",
};
const REGION = "eu-west-2";
const MODEL_ID = "openai.gpt-oss-120b-1:0";

let standIn: BedrockStandIn | undefined;
let stack: TestStack | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await stack?.stop();
  await standIn?.stop();
  stack = undefined;
  standIn = undefined;
});

/** A stand-in for the function's credentials and a test stack whose model is Bedrock through it. */
async function bedrockStack(
  options: {
    credentials?: () => Promise<AwsCredentialIdentity>;
    env?: Record<string, string>;
    onAnswered?: (answered: number) => void;
    lifetimeSeconds?: number;
  } = {},
) {
  standIn = await startBedrockStandIn({
    credentials: FUNCTION_CREDENTIALS,
    region: REGION,
    models: [MODEL_ID],
    ...(options.onAnswered ? { onAnswered: options.onAnswered } : {}),
  });
  stack = await startTestStack(
    {
      MODEL_PROVIDER: "bedrock",
      BEDROCK_BASE_URL: standIn.baseURL,
      AWS_REGION: REGION,
      ...options.env,
    },
    {
      awsCredentials: options.credentials ?? (async () => FUNCTION_CREDENTIALS),
      ...(options.lifetimeSeconds ? { bedrockKeyLifetimeSeconds: options.lifetimeSeconds } : {}),
    },
  );
  return { standIn, stack };
}

describe("the Bedrock stand-in verifies short-term keys as Bedrock does", () => {
  const now = Date.UTC(2026, 11, 1, 12, 0, 0);
  /** A key made by AWS's generator (the reference) with the system clock at `at`. */
  async function keyAt(
    at: number,
    credentials = FUNCTION_CREDENTIALS,
    region = REGION,
    expiresInSeconds = 900,
  ) {
    vi.useFakeTimers({ toFake: ["Date"], now: at });
    try {
      return await getToken({ credentials, region, expiresInSeconds });
    } finally {
      vi.useRealTimers();
    }
  }

  it("makes the key AWS's token generator makes, byte for byte, signed at the injected time", async () => {
    for (const [credentials, region, lifetime] of [
      [FUNCTION_CREDENTIALS, REGION, 900],
      [
        { accessKeyId: "AKIALONGTERM00000001", secretAccessKey: "longTermSecret0000000000000000000000000" },
        "us-east-1",
        43_200,
      ],
    ] as const) {
      const ours = await makeBedrockKey({ credentials, region, expiresInSeconds: lifetime, signedAt: now });
      expect(ours).toBe(await keyAt(now, credentials, region, lifetime));
    }
    for (const lifetime of [0, 43_201]) {
      await expect(
        makeBedrockKey({
          credentials: FUNCTION_CREDENTIALS,
          region: REGION,
          expiresInSeconds: lifetime,
          signedAt: now,
        }),
      ).rejects.toBeInstanceOf(RangeError);
    }
  });

  it("accepts a key of the function's credentials for its Region, within its lifetime", async () => {
    const key = await keyAt(now);
    const verdict = await verifyBedrockKey(key, FUNCTION_CREDENTIALS, REGION, now + 899_000);
    expect(verdict.refusal).toBeUndefined();
    expect(verdict.seen).toMatchObject({ accessKeyId: FUNCTION_CREDENTIALS.accessKeyId, signedAt: now });
    expect(verdict.seen.expiresAt).toBe(now + 900_000);
  });

  it("refuses an expired key, one for another Region, other credentials, a forged signature or no prefix", async () => {
    const key = await keyAt(now);
    const refusal = async (candidate: string, at = now) =>
      (await verifyBedrockKey(candidate, FUNCTION_CREDENTIALS, REGION, at)).refusal;
    expect(await refusal(key, now + 900_000)).toEqual({
      type: "AccessDeniedException",
      message: "Bearer Token has expired",
    });
    expect((await refusal(await keyAt(now, FUNCTION_CREDENTIALS, "us-east-1")))?.message).toMatch(
      /made for us-east-1, not eu-west-2/,
    );
    const stranger = {
      ...FUNCTION_CREDENTIALS,
      secretAccessKey: "someoneElsesSecretAccessKey00000000000000",
    };
    expect((await refusal(await keyAt(now, stranger)))?.type).toBe("InvalidSignatureException");
    const otherSession = { ...FUNCTION_CREDENTIALS, sessionToken: "anotherSession" };
    expect((await refusal(await keyAt(now, otherSession)))?.type).toBe("UnrecognizedClientException");
    // The same request with one character of its signature changed.
    const decoded = Buffer.from(key.slice("bedrock-api-key-".length), "base64").toString("utf8");
    const forged = decoded.replace(
      /X-Amz-Signature=([0-9a-f])/,
      (_, c: string) => `X-Amz-Signature=${c === "0" ? "1" : "0"}`,
    );
    expect((await refusal(`bedrock-api-key-${Buffer.from(forged).toString("base64")}`))?.type).toBe(
      "InvalidSignatureException",
    );
    // A key signed for a longer life than it was made with: the signature no longer matches.
    const stretched = decoded.replace("X-Amz-Expires=900", "X-Amz-Expires=43200");
    expect((await refusal(`bedrock-api-key-${Buffer.from(stretched).toString("base64")}`))?.type).toBe(
      "InvalidSignatureException",
    );
    expect((await refusal("sk-not-a-bedrock-key"))?.message).toBe(
      "Invalid API Key format: Must start with pre-defined prefix",
    );
  });

  it("answers a request without a valid key with Bedrock's 403 shape and passes a valid one to the model server", async () => {
    standIn = await startBedrockStandIn({
      credentials: FUNCTION_CREDENTIALS,
      region: REGION,
      models: [MODEL_ID],
    });
    const body = JSON.stringify({ model: MODEL_ID, messages: [{ role: "user", content: "hello" }] });
    const refused = await fetch(`${standIn.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer bedrock-api-key-bm90LWEta2V5", "content-type": "application/json" },
      body,
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("x-amzn-errortype")).toMatch(/^AccessDeniedException:/);
    expect(await refused.json()).toEqual({
      Message: "Authentication failed: Please make sure your API Key is valid.",
    });
    expect(standIn.model.requests).toHaveLength(0);
    const key = await getToken({ credentials: FUNCTION_CREDENTIALS, region: REGION, expiresInSeconds: 900 });
    const answered = await fetch(`${standIn.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { object: string }).object).toBe("chat.completion");
    expect(standIn.model.requests).toHaveLength(1);
  });
});

describe("MODEL_PROVIDER=bedrock", () => {
  it("runs the seed scenario end to end with keys made from the function's credentials", async () => {
    const { standIn, stack } = await bedrockStack();
    const response = await stack.invoke(seedEvent());
    expect(response.statusCode, response.body).toBe(200);
    const body = JSON.parse(response.body ?? "{}") as { status: string; cycles: number; runId: string };
    expect(body).toMatchObject({ status: "completed", cycles: 3 });
    // Every call was Bedrock-authenticated with one cached key, and asked for the configured model.
    expect(standIn.keys).toHaveLength(3);
    expect(standIn.keys.every((key) => key.refused === null)).toBe(true);
    expect(new Set(standIn.keys.map((key) => key.signedAt)).size).toBe(1);
    expect(standIn.model.requests.map((request) => request.model)).toEqual([MODEL_ID, MODEL_ID, MODEL_ID]);
    // The key is a credential: it is in no response and in no stored record.
    const stored = await stack.deps.runs.get("tenant_uk_01", body.runId);
    expect(JSON.stringify(stored)).not.toContain("bedrock-api-key-");
    expect(response.body).not.toContain("bedrock-api-key-");
  });

  it("names its provider aws.bedrock on spans, whatever the endpoint's host (here the local stand-in)", async () => {
    const { standIn, stack } = await bedrockStack();
    expect(new URL(standIn.baseURL).hostname).toBe("127.0.0.1");
    expect(stack.deps.model.telemetry).toMatchObject({
      providerName: "aws.bedrock",
      requestModel: MODEL_ID,
      serverAddress: "127.0.0.1",
    });
  });

  it("renews the key before it expires during a run that spans its expiry, by the injected clock", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 11, 1, 12, 0, 0) });
    const start = Date.now();
    // 250 s after the first answer the first key (300 s) has 50 s left, under the 60 s margin; 310 s
    // later the second has expired too.
    const jumps = [250_000, 310_000];
    const { standIn, stack } = await bedrockStack({
      lifetimeSeconds: 300,
      env: { RUN_TIMEOUT_MS: "900000" },
      onAnswered: (answered) => vi.setSystemTime(Date.now() + (jumps[answered - 1] ?? 0)),
    });
    const response = await stack.invoke(seedEvent(), 900_000);
    expect(response.statusCode, response.body).toBe(200);
    expect(JSON.parse(response.body ?? "{}")).toMatchObject({ status: "completed", cycles: 3 });
    const seen = standIn.keys.map((key) => ({ signed: (key.signedAt - start) / 1000, refused: key.refused }));
    expect(seen).toEqual([
      { signed: 0, refused: null },
      { signed: 250, refused: null },
      { signed: 560, refused: null },
    ]);
    // No key went out with less than the renewal margin left.
    for (const key of standIn.keys) expect(key.expiresAt - key.receivedAt).toBeGreaterThanOrEqual(60_000);
  });

  it("a failed renewal is a typed, retryable model_error (502 MODEL_KEY_UNAVAILABLE); the next run makes a key", async () => {
    let fail = true;
    const { standIn, stack } = await bedrockStack({
      credentials: async () => {
        if (fail) throw new Error("Unable to find environment variable credentials.");
        return FUNCTION_CREDENTIALS;
      },
    });
    const failed = await stack.invoke(seedEvent());
    expect(failed.statusCode).toBe(502);
    const problem = JSON.parse(failed.body ?? "{}") as Record<string, unknown>;
    expect(problem).toMatchObject({
      code: "MODEL_UNAVAILABLE",
      modelErrorCode: "MODEL_KEY_UNAVAILABLE",
      providerStatus: null,
    });
    expect(problem.detail).toBe(
      "Could not make a Bedrock API key from the function's AWS credentials. Retry shortly. The run stopped after 1 cycle(s).",
    );
    expect(failed.body).not.toContain("environment variable");
    expect(standIn.keys).toHaveLength(0);
    fail = false;
    const retried = await stack.invoke(seedEvent());
    expect(retried.statusCode, retried.body).toBe(200);
  });

  it("retries throttling within the deadline: one 429 then the answer completes the run", async () => {
    const { standIn, stack } = await bedrockStack();
    standIn.fault(["throttled"]);
    const response = await stack.invoke(seedEvent());
    expect(response.statusCode, response.body).toBe(200);
    expect(standIn.keys).toHaveLength(4);
  });

  const refusals = [
    {
      faults: ["throttled", "throttled", "throttled"] as const,
      status: 429,
      code: "MODEL_THROTTLED",
      sentence: `Amazon Bedrock is throttling calls to ${MODEL_ID} in ${REGION}; retry later, or ask for a higher quota in Service Quotas.`,
    },
    {
      faults: ["noModelAccess"] as const,
      status: 403,
      code: "MODEL_ACCESS_DENIED",
      sentence: `This AWS account has no access to ${MODEL_ID} in ${REGION}: enable it in the Amazon Bedrock console (Model access, or accept the model's offer in the Model catalog) for ${REGION}, then retry.`,
    },
    {
      faults: ["notAuthorized"] as const,
      status: 403,
      code: "MODEL_NOT_PERMITTED",
      sentence: `The function's role may not invoke ${MODEL_ID} in ${REGION}; deploy with -c bedrockModelId=<the model to use>.`,
    },
    {
      faults: ["validation"] as const,
      status: 400,
      code: "MODEL_REQUEST_INVALID",
      sentence: `Amazon Bedrock rejected the request to ${MODEL_ID} as invalid (HTTP 400).`,
    },
    {
      faults: ["internal", "unavailable", "internal"] as const,
      status: 500,
      code: "MODEL_SERVICE_ERROR",
      sentence: `Amazon Bedrock failed to answer for ${MODEL_ID} (HTTP 500); retry later.`,
    },
  ];
  for (const refusal of refusals) {
    it(`maps Bedrock's ${refusal.faults[0]} to 502 MODEL_UNAVAILABLE ${refusal.code} with a fixed sentence`, async () => {
      const { standIn, stack } = await bedrockStack();
      standIn.fault([...refusal.faults]);
      const response = await stack.invoke(seedEvent());
      expect(response.statusCode).toBe(502);
      const problem = JSON.parse(response.body ?? "{}") as { runId: string; detail: string };
      expect(problem).toMatchObject({
        code: "MODEL_UNAVAILABLE",
        modelErrorCode: refusal.code,
        providerStatus: refusal.status,
        detail: `${refusal.sentence} The run stopped after 1 cycle(s).`,
      });
      // What Bedrock said stays out of the answer and the stored run.
      const stored = await stack.deps.runs.get("tenant_uk_01", problem.runId);
      expect(stored?.run).toMatchObject({ status: "model_error" });
      for (const text of [response.body ?? "", JSON.stringify(stored)]) {
        expect(text).not.toMatch(
          /internal\.amazon\.com|identity-based policy|Malformed input|Too many requests/,
        );
      }
    });
  }

  it("names a model the endpoint does not serve MODEL_NOT_FOUND", async () => {
    const { stack } = await bedrockStack({ env: { BEDROCK_MODEL_ID: "anthropic.claude-sonnet-4-6" } });
    const response = await stack.invoke(seedEvent());
    expect(JSON.parse(response.body ?? "{}")).toMatchObject({
      modelErrorCode: "MODEL_NOT_FOUND",
      providerStatus: 400,
    });
  });
});

describe("Bedrock configuration and key cache", () => {
  it("validates the model id and refuses an OpenAI key with MODEL_PROVIDER=bedrock", () => {
    const config = loadConfig({ MODEL_PROVIDER: "bedrock", AWS_REGION: "us-west-2" });
    expect(config.model.bedrock).toEqual({
      modelId: "openai.gpt-oss-120b-1:0",
      baseURL: "https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1",
      region: "us-west-2",
    });
    for (const id of ["us.deepseek.r1-v1:0", "qwen.qwen3-32b-v1:0", "global.openai.gpt-oss-20b-1:0"]) {
      expect(loadConfig({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: id }).model.bedrock.modelId).toBe(id);
    }
    for (const id of ["gpt-4o", "arn:aws:bedrock:us-east-1::foundation-model/x.y", "Openai.GPT"]) {
      expect(() => loadConfig({ BEDROCK_MODEL_ID: id })).toThrow(
        /BEDROCK_MODEL_ID: must be a Bedrock model id/,
      );
    }
    expect(() => loadConfig({ MODEL_PROVIDER: "bedrock", OPENAI_API_KEY_SECRET_NAME: "k" })).toThrow(
      ConfigError,
    );
  });

  it("refuses at cold start an OpenAI setting with MODEL_PROVIDER=bedrock (it would be ignored), as synth does", () => {
    expect(() =>
      loadConfig({
        MODEL_PROVIDER: "bedrock",
        OPENAI_BASE_URL: "http://127.0.0.1:8080/v1",
        OPENAI_API_KEY: "k",
      }),
    ).toThrow(
      "Invalid configuration: OPENAI_BASE_URL, OPENAI_API_KEY: MODEL_PROVIDER is bedrock, which does not read them (it calls Amazon Bedrock with BEDROCK_MODEL_ID, signed in with the function's AWS credentials); unset them, or set MODEL_PROVIDER=openai-compatible.",
    );
    // The default provider refuses a Bedrock model id the same way.
    expect(() => loadConfig({ BEDROCK_MODEL_ID: "qwen.qwen3-32b-v1:0" })).toThrow(
      "Invalid configuration: BEDROCK_MODEL_ID: MODEL_PROVIDER is openai-compatible, which does not read it (it calls the OpenAI-compatible server at OPENAI_BASE_URL with OPENAI_MODEL); unset it, or set MODEL_PROVIDER=bedrock.",
    );
  });

  it("keeps one key until the renewal margin, shares one renewal between concurrent callers", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 11, 1, 12, 0, 0) });
    let reads = 0;
    const keys = new BedrockApiKeys({
      credentials: async () => {
        reads += 1;
        return FUNCTION_CREDENTIALS;
      },
      region: REGION,
      now: () => Date.now(),
    });
    const first = await keys.get();
    vi.setSystemTime(Date.now() + 839_000);
    expect(await keys.get()).toBe(first);
    vi.setSystemTime(Date.now() + 1_000);
    const [a, b] = await Promise.all([keys.get(), keys.get()]);
    expect(a).toBe(b);
    expect(a).not.toBe(first);
    expect(decodeBedrockKey(a).signedAt - decodeBedrockKey(first).signedAt).toBe(840_000);
    expect(reads).toBe(2);
  });

  it("does not sign a key with credentials about to expire, and never caches a failure", async () => {
    const now = Date.now();
    let expiration = new Date(now + 30_000);
    const keys = new BedrockApiKeys({
      credentials: async () => ({ ...FUNCTION_CREDENTIALS, expiration }),
      region: REGION,
      now: () => now,
    });
    await expect(keys.get()).rejects.toBeInstanceOf(BedrockKeyError);
    expiration = new Date(now + 3_600_000);
    expect(decodeBedrockKey(await keys.get()).query.get("X-Amz-Credential")).toContain(
      `/${REGION}/bedrock/aws4_request`,
    );
  });
});
