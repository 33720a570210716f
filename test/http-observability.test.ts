import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { SecretsProvider } from "@aws-lambda-powertools/parameters/secrets";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { ProblemSchema, RunResponseSchema } from "../functions/api/contract.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { loadConfig } from "../shared/config.js";
import { type ApiDeps, createApiDeps } from "../shared/deps.js";
import { createObservability } from "../shared/observability.js";
import { apiEvent, type EventOptions } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const SECRET_NAME = "boundloop/openai";
const SECRET_VALUE = "sk-test-0123456789abcdefSECRETVALUE";
const LOCAL_KEY = "sk-local-9876543210fedcbaLOCALKEY";
const PROMPT = "Calculate tax on 1500 GBP for a client in the UK, reference ZEBRA-7731.";

/**
 * Secrets Manager has no local counterpart on this machine, so this is a loopback HTTP server speaking
 * its JSON 1.1 protocol (GetSecretValue) to the real AWS SDK client under Powertools Parameters.
 */
async function startSecretsServer(secrets: Record<string, string>) {
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"]);
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { SecretId: string };
      calls.push(`${target}:${SecretId}`);
      const value = secrets[SecretId];
      const status = target === "secretsmanager.GetSecretValue" && value !== undefined ? 200 : 400;
      const body =
        status === 200
          ? {
              ARN: `arn:aws:secretsmanager:eu-west-2:123456789012:secret:${SecretId}-AbCdEf`,
              Name: SecretId,
              SecretString: value,
              VersionId: "v1",
              VersionStages: ["AWSCURRENT"],
              CreatedDate: 1796018400,
            }
          : {
              __type: "ResourceNotFoundException",
              message: "Secrets Manager can't find the specified secret.",
            };
      res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
      res.end(JSON.stringify(body));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    stop: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

type Result = APIGatewayProxyStructuredResultV2;
let stack: TestStack;
let secrets: Awaited<ReturnType<typeof startSecretsServer>>;
const built: ApiDeps[] = [];

/** A handler over the test table and model server, with extra config; the key from `secretsEndpoint`. */
function handlerWith(env: Record<string, string>) {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
    TABLE_NAME: stack.config.table.name,
    OPENAI_BASE_URL: stack.model.baseURL,
    POWERTOOLS_METRICS_NAMESPACE: "boundloop-test",
    ...env,
  });
  let deps: ApiDeps | undefined;
  const factory = () => {
    deps = createApiDeps(config, {
      secretsProvider: new SecretsProvider({
        awsSdkV3Client: new SecretsManagerClient({
          endpoint: secrets.endpoint,
          region: "eu-west-2",
          credentials: { accessKeyId: "local", secretAccessKey: "local" },
          maxAttempts: 1,
        }),
      }),
    });
    built.push(deps);
    return deps;
  };
  const handler = createHandler({ config, load: factory });
  return {
    deps: () => deps,
    invoke: async (options: EventOptions = {}) =>
      (await handler(
        apiEvent("http-api-v2", options) as unknown as ApiEvent,
        createLambdaContext(29_000),
      )) as Result,
  };
}

/** Captures what the process writes to stdout (where Powertools Logger and Metrics write) while `fn` runs. */
async function captureStdout<T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[]; raw: string }> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
    return true;
  });
  try {
    const result = await fn();
    const raw = chunks.join("");
    return { result, raw, lines: raw.split("\n").filter((line) => line.trim() !== "") };
  } finally {
    spy.mockRestore();
  }
}

beforeAll(async () => {
  stack = await startTestStack();
  secrets = await startSecretsServer({ [SECRET_NAME]: SECRET_VALUE });
});
afterEach(() => {
  stack.model.usePlanner();
});
afterAll(async () => {
  for (const deps of built) deps.ddb.destroy();
  await secrets?.stop();
  await stack?.stop();
});

describe("the OpenAI key from Secrets Manager (OPENAI_API_KEY_SECRET_NAME)", () => {
  it("is not read for /healthz, is read once on the first run, then cached", async () => {
    const api = handlerWith({ OPENAI_API_KEY_SECRET_NAME: SECRET_NAME });
    const health = await api.invoke({ method: "GET", path: "/healthz", claims: null });
    expect(health.statusCode).toBe(200);
    expect(secrets.calls).toEqual([]);
    expect(api.deps()).toBeUndefined();

    stack.model.script([{ content: "first" }, { content: "second" }]);
    const first = RunResponseSchema.parse(JSON.parse((await api.invoke()).body ?? ""));
    expect(first.status).toBe("completed");
    expect(secrets.calls).toEqual([`secretsmanager.GetSecretValue:${SECRET_NAME}`]);
    expect(stack.model.requests.at(-1)?.authorization).toBe(`Bearer ${SECRET_VALUE}`);

    const second = RunResponseSchema.parse(JSON.parse((await api.invoke()).body ?? ""));
    expect(second.answer).toBe("second");
    expect(secrets.calls).toHaveLength(1);
  });

  it("a secret that cannot be read fails the run as 502 MODEL_UNAVAILABLE, recorded in the audit", async () => {
    const api = handlerWith({ OPENAI_API_KEY_SECRET_NAME: "boundloop/missing" });
    const { result: response, raw } = await captureStdout(() => api.invoke());
    expect(response.statusCode).toBe(502);
    const body = ProblemSchema.parse(JSON.parse(response.body ?? ""));
    expect(body).toMatchObject({ code: "MODEL_UNAVAILABLE", runStatus: "model_error", cycles: 1 });
    expect(stack.model.requests).toHaveLength(2); // only the two runs above reached the model
    const run = await api.deps()?.runs.get("tenant_uk_01", String(body.runId));
    expect(run?.run.status).toBe("model_error");
    // The client and the record get a fixed sentence: the secret's name and the SDK's text stay in the logs.
    expect(run?.run.reason).toBe("The model provider failed.");
    expect(JSON.stringify(body)).not.toContain("boundloop/missing");
    expect(raw).toContain('"ProblemResponses":1');
    expect(raw).toContain('"code":"MODEL_UNAVAILABLE"');
  });
});

describe("logs and metrics (Powertools, JSON and EMF on stdout)", () => {
  it("log lines carry runId, tenantId, toolName, status and latency, and never the key or the prompt", async () => {
    const api = handlerWith({ OPENAI_API_KEY_SECRET_NAME: SECRET_NAME });
    const {
      result: response,
      lines,
      raw,
    } = await captureStdout(() => api.invoke({ body: { prompt: PROMPT } }));
    const body = RunResponseSchema.parse(JSON.parse(response.body ?? ""));
    expect(body.status).toBe("completed");

    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const logs = records.filter((r) => typeof r.level === "string");
    const byMessage = (message: string) => logs.filter((r) => r.message === message);
    expect(logs.length).toBeGreaterThanOrEqual(4);
    for (const log of logs) {
      expect(log).toMatchObject({ service: "boundloop", runId: body.runId, tenantId: "tenant_uk_01" });
      expect(log.function_request_id).toEqual(expect.any(String));
    }
    expect(byMessage("run started")).toHaveLength(1);
    expect(byMessage("run started")[0]).toMatchObject({
      level: "INFO",
      promptChars: PROMPT.length,
      maxCycles: 5,
    });
    const toolLines = byMessage("tool result");
    expect(toolLines).toHaveLength(body.toolResults.length);
    expect(toolLines[0]).toMatchObject({
      level: "INFO",
      toolName: "calculateTax",
      status: "success",
      latencyMs: body.toolResults[0]?.metadata.latencyMs,
      cycle: 1,
    });
    expect(byMessage("run finished")[0]).toMatchObject({
      status: "completed",
      cycles: body.cycles,
      latencyMs: body.durationMs,
      totalTokens: body.usage.totalTokens,
    });
    expect(byMessage("request")[0]).toMatchObject({ method: "POST", path: "/v1/runs", httpStatus: 200 });

    expect(stack.model.requests.at(-1)?.authorization).toBe(`Bearer ${SECRET_VALUE}`);
    expect(raw).not.toContain(SECRET_VALUE);
    expect(raw).not.toContain("ZEBRA-7731");
    expect(raw).not.toContain(body.answer ?? "(no answer)");
  });

  it("a locally configured OPENAI_API_KEY never reaches the logs either, even on failures", async () => {
    const api = handlerWith({ OPENAI_API_KEY: LOCAL_KEY });
    stack.model.script([{ status: 401 }]);
    const { result: response, raw } = await captureStdout(async () => [
      await api.invoke(),
      await api.invoke({ body: "{bad json" }),
    ]);
    expect(response.map((r) => r.statusCode)).toEqual([502, 400]);
    expect(raw).toContain('"level":"INFO"');
    expect(raw).not.toContain(LOCAL_KEY);
  });

  it("redacts secret-like attributes even if code ever logged them", async () => {
    const { logger } = createObservability(loadConfig({}).observability);
    const { lines } = await captureStdout(async () => {
      logger.info("careless", {
        apiKey: LOCAL_KEY,
        nested: { Authorization: `Bearer ${LOCAL_KEY}` },
        prompt: PROMPT,
      });
    });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      message: "careless",
      apiKey: "[REDACTED]",
      nested: { Authorization: "[REDACTED]" },
      prompt: "[REDACTED]",
    });
  });

  it("emits EMF metrics: runs by status, cycles, tool results by status, tokens, latency; flushed per invocation", async () => {
    const api = handlerWith({ OPENAI_API_KEY_SECRET_NAME: SECRET_NAME });
    const { result: response, lines } = await captureStdout(() => api.invoke({ body: { prompt: PROMPT } }));
    const body = RunResponseSchema.parse(JSON.parse(response.body ?? ""));
    const emf = lines
      .map(
        (line) =>
          JSON.parse(line) as Record<string, unknown> & {
            _aws?: {
              CloudWatchMetrics: Array<{
                Namespace: string;
                Dimensions: string[][];
                Metrics: Array<{ Name: string; Unit: string }>;
              }>;
            };
          },
      )
      .filter((r) => r._aws !== undefined);
    for (const record of emf) expect(record._aws?.CloudWatchMetrics[0]?.Namespace).toBe("boundloop-test");

    const runLines = emf.filter((r) => "Runs" in r);
    expect(runLines).toHaveLength(1);
    expect(runLines[0]).toMatchObject({
      service: "boundloop",
      status: "completed",
      Runs: 1,
      Cycles: body.cycles,
      PromptTokens: body.usage.promptTokens,
      CompletionTokens: body.usage.completionTokens,
      TotalTokens: body.usage.totalTokens,
      RunLatency: body.durationMs,
    });
    expect(runLines[0]?._aws?.CloudWatchMetrics[0]?.Dimensions).toEqual([["service", "status"]]);
    const units = Object.fromEntries(
      (runLines[0]?._aws?.CloudWatchMetrics[0]?.Metrics ?? []).map((m) => [m.Name, m.Unit]),
    );
    expect(units).toMatchObject({
      Runs: "Count",
      Cycles: "Count",
      TotalTokens: "Count",
      RunLatency: "Milliseconds",
    });

    const toolLines = emf.filter((r) => "ToolResults" in r);
    expect(toolLines).toHaveLength(body.toolResults.length);
    expect(toolLines[0]).toMatchObject({ toolName: "calculateTax", status: "success", ToolResults: 1 });
    expect(toolLines[0]?._aws?.CloudWatchMetrics[0]?.Dimensions).toEqual([["service", "toolName", "status"]]);
    expect(emf.filter((r) => "ToolLatency" in r)).toHaveLength(body.toolResults.length);

    // The next invocation starts clean: its own metrics only, no status dimension carried over.
    const { lines: next } = await captureStdout(() => api.invoke({ method: "GET", path: "/v1/invoices" }));
    expect(next.filter((line) => line.includes('"Runs"'))).toHaveLength(0);
  });
});
