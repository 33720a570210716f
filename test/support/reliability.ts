/**
 * Shared pieces of the reliability suite (test/reliability): scale from the environment, a DynamoDB
 * throttling fault injected through an SDK middleware, log capture and the secret scan, a bounded
 * worker pool, and reading a tenant's partition.
 */
import { createHmac } from "node:crypto";
import { ProvisionedThroughputExceededException, ThrottlingException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { vi } from "vitest";
import { seededRandom } from "../../local/model-server.js";
import { keys } from "../../shared/store/keys.js";

/**
 * The storm's scale: `SOAK=1` (npm run soak) gives the full scale, 1,000 POSTs over 50
 * Idempotency-Keys; otherwise the `npm test` scale, 200 over 20. `inFlight`: concurrent requests.
 */
export const SCALE =
  process.env.SOAK === "1"
    ? { requests: 1_000, keys: 50, inFlight: 20, killed: 5, soak: true }
    : { requests: 200, keys: 20, inFlight: 20, killed: 2, soak: false };

/** A distinctive fake OpenAI key the suite's handlers send to the model server; it must never be logged. */
export const FAKE_API_KEY = "sk-boundloop-reliab1lity-FAKE-7f3c9a1e5d2b4c6a8e0f";

/**
 * A real-looking JWT (HS256, three base64url parts) sent as `Authorization: Bearer …` on every request
 * of the suite, as API Gateway forwards it after its JWT authorizer verified it. It must never be logged.
 */
export const FAKE_JWT = (() => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const head = `${part({ alg: "HS256", typ: "JWT", kid: "reliability" })}.${part({
    sub: "usr_reliability",
    tenant_id: "tenant_reliability",
    scope: "billing:read billing:write",
    iss: "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_Example1",
    aud: "boundloop-api",
    exp: 1_796_025_600,
  })}`;
  const signature = createHmac("sha256", "reliability-signing-key").update(head).digest("base64url");
  return `${head}.${signature}`;
})();

/** The secret strings a log line must never contain: the API key, the JWT, and the JWT's signature. */
export const SECRETS = [FAKE_API_KEY, FAKE_JWT, FAKE_JWT.split(".")[2] ?? FAKE_JWT];

/** Returns the secrets found in `text` (empty when none), for `expect(...).toEqual([])`. */
export function secretsIn(text: string): string[] {
  return SECRETS.filter((secret) => text.includes(secret));
}

/**
 * Captures everything written to this process's stdout and stderr (Powertools Logger and Metrics write
 * JSON lines to stdout; the idempotency layer writes to stderr) until `stop()`. Output is kept, not
 * printed. `text()` returns it so far.
 */
export function captureOutput(): { text(): string; lines(): number; stop(): void } {
  const chunks: string[] = [];
  const take = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(take);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(take);
  return {
    text: () => chunks.join(""),
    lines: () =>
      chunks
        .join("")
        .split("\n")
        .filter((line) => line.trim() !== "").length,
    stop() {
      out.mockRestore();
      err.mockRestore();
    },
  };
}

/** DynamoDB commands that write. */
const WRITE_COMMANDS = new Set(["PutItemCommand", "UpdateItemCommand", "DeleteItemCommand"]);

/** What {@link injectThrottling} did: write attempts seen and throttles injected, by error name. */
export interface ThrottleStats {
  writeAttempts: number;
  injected: number;
  byName: Record<string, number>;
}

/**
 * Makes `rate` (0..1) of the client's write attempts fail with DynamoDB's throttling errors
 * (ProvisionedThroughputExceededException or ThrottlingException, the SDK's own exception classes,
 * HTTP 400 in `$metadata`) before they reach the server. The middleware sits in the deserialize step,
 * inside the SDK's retry middleware, so each HTTP attempt is a draw and the SDK's standard retry
 * strategy (throttling backoff, 3 attempts) handles the errors as it would DynamoDB's. Draws come from a
 * PRNG seeded with `seed`. Optional: `only` limits it to the write attempts it accepts (command name and
 * the marshalled input), `limit` caps the throttles injected, `errorName` always throws that class.
 * `stop()` removes the middleware.
 */
export function injectThrottling(
  client: DynamoDBDocumentClient,
  options: {
    rate: number;
    seed: number;
    only?: (command: string, input: unknown) => boolean;
    limit?: number;
    errorName?: "ProvisionedThroughputExceededException" | "ThrottlingException";
  },
): { stats: ThrottleStats; stop(): void } {
  const random = seededRandom(options.seed);
  const stats: ThrottleStats = { writeAttempts: 0, injected: 0, byName: {} };
  const name = `injectThrottling_${options.seed}_${Math.random()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      if (!WRITE_COMMANDS.has(command)) return next(args);
      if (options.only && !options.only(command, (args as { input?: unknown }).input)) return next(args);
      stats.writeAttempts += 1;
      const [hit, pick] = [random(), random()];
      if (hit >= options.rate || stats.injected >= (options.limit ?? Number.POSITIVE_INFINITY))
        return next(args);
      stats.injected += 1;
      const $metadata = { httpStatusCode: 400, requestId: `injected-${stats.injected}`, attempts: 1 };
      const throughput = options.errorName
        ? options.errorName === "ProvisionedThroughputExceededException"
        : pick < 0.5;
      const error = throughput
        ? new ProvisionedThroughputExceededException({
            message: "The level of configured provisioned throughput for the table was exceeded.",
            $metadata,
          })
        : new ThrottlingException({
            message: "Rate of requests exceeds the allowed throughput.",
            $metadata,
          });
      stats.byName[error.name] = (stats.byName[error.name] ?? 0) + 1;
      throw error;
    },
    { step: "deserialize", name },
  );
  return {
    stats,
    stop() {
      client.middlewareStack.remove(name);
    },
  };
}

/**
 * Runs `work` over `items` with at most `limit` in flight, keeping results in input order.
 */
export async function pool<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>) {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Every item in a tenant's partition (consistent reads, all pages), as stored. */
export async function tenantItems(
  ddb: DynamoDBDocumentClient,
  tableName: string,
  tenantId: string,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": keys.tenant(tenantId) },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** The sort keys of a tenant's items that start with one of `prefixes` (e.g. INVOICE#, QUOTE#). */
export async function tenantKeys(
  ddb: DynamoDBDocumentClient,
  tableName: string,
  tenantId: string,
  prefixes: string[] = [""],
): Promise<string[]> {
  return (await tenantItems(ddb, tableName, tenantId))
    .map((item) => String(item.sk))
    .filter((sk) => prefixes.some((prefix) => sk.startsWith(prefix)));
}

/** Nearest-rank percentile of `values` (ms), 0 when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}
