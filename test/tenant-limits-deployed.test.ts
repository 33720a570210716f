/**
 * `npm run tenant -- limits <tenant> …` against a deployed stack (local/tenant.ts, docs/quotas.md
 * "Per-tenant overrides"): the real command, spawned as npm runs it, with the real AWS SDK clients
 * pointed by AWS_ENDPOINT_URL_<SERVICE> at a local stand-in of CloudFormation and Lambda answering their
 * documented shapes (the stack's TableName and ApiFunctionName outputs, the API function's
 * configuration, the runner's callbacks) and at DynamoDB Local for the table. It checks a cost limit
 * against the function's MODEL_PRICES, not the shell's, and wakes the tenant's waiting runs through the
 * function's RUNNER_FUNCTION_ARN.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createDevIssuer, writeIssuerFile } from "../local/dev-auth.js";
import { parseLimitsCommand, runLimitsCommand } from "../local/tenant.js";
import { QuotaLimitStore } from "../shared/store/quota-limits.js";
import { QuotaWaitStore } from "../shared/store/quota-waits.js";
import {
  type AwsStandIn,
  type ReceivedRequest,
  STAND_IN_CREDENTIALS,
  startAwsStandIn,
} from "./support/aws-stand-in.js";
import { runScript } from "./support/scripts.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const FUNCTION_NAME = "Boundloop-ApiFunction-1A2B3C";
const RUNNER_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:Boundloop-Runner-9Z8Y:live";
const FUNCTION_ENV = {
  OPENAI_MODEL: "gpt-4o-mini",
  MODEL_PRICES: JSON.stringify({
    "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
  }),
  RUNNER_FUNCTION_ARN: RUNNER_ARN,
};

let stack: TestStack;
let aws: AwsStandIn;
beforeAll(async () => {
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
  aws = await startAwsStandIn();
  aws.answer((request) => replyTo(request));
});
afterAll(async () => {
  await aws?.close();
  await stack?.stop();
});

/** DescribeStacks (query protocol, XML), GetFunctionConfiguration and the callback (REST-JSON). */
function replyTo(request: ReceivedRequest) {
  const form = new URLSearchParams(request.body.toString("utf8"));
  if (request.method === "POST" && form.get("StackName") === "Boundloop") {
    return {
      status: 400,
      xml: `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id Boundloop does not exist</Message></Error><RequestId>r-2</RequestId></ErrorResponse>`,
    };
  }
  if (request.method === "POST" && form.get("Action") === "DescribeStacks") {
    const output = (key: string, value: string) =>
      `<member><OutputKey>${key}</OutputKey><OutputValue>${value}</OutputValue></member>`;
    return {
      status: 200,
      xml: `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>${form.get("StackName")}</StackName><StackStatus>UPDATE_COMPLETE</StackStatus><CreationTime>2026-12-01T00:00:00Z</CreationTime><Outputs>${output("TableName", stack.config.table.name)}${output("ApiFunctionName", FUNCTION_NAME)}</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
    };
  }
  if (request.method === "GET" && request.path === `/2015-03-31/functions/${FUNCTION_NAME}/configuration`) {
    return { status: 200, json: { FunctionName: FUNCTION_NAME, Environment: { Variables: FUNCTION_ENV } } };
  }
  if (request.method === "POST" && request.path.startsWith("/2025-12-01/durable-execution-callbacks/")) {
    return { status: 200, json: {} };
  }
  return { status: 404, json: { message: `unexpected ${request.method} ${request.path}` } };
}

/** The command against the stack `Prod`, AWS reached through the stand-in and DynamoDB Local. */
const deployedCommand = (args: string[], env: Record<string, string> = {}) =>
  runScript("tsx", ["local/tenant.ts", "limits", ...args, "--stack-name", "Prod"], {
    AWS_REGION: "eu-west-1",
    AWS_ACCESS_KEY_ID: STAND_IN_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: STAND_IN_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_CLOUDFORMATION: aws.endpoint,
    AWS_ENDPOINT_URL_LAMBDA: aws.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: stack.config.table.endpoint as string,
    ...env,
  });

describe("npm run tenant -- limits on a deployed stack", () => {
  it("checks a cost limit against the function's MODEL_PRICES and wakes the tenant's waiting runs through its runner", async () => {
    const tenantId = "tenant_ops_deployed";
    const waits = new QuotaWaitStore(stack.deps.ddb, stack.config.table.name);
    const wait = {
      runId: "run_waits_1",
      callbackId: "cb/7+1=",
      waitName: "cycle-3:quota",
      since: "2026-12-03T09:00:00Z",
    };
    await waits.put(tenantId, wait, Math.floor(Date.now() / 1000) + 3_600);
    // The shell has no price for the model; the function has one.
    const set = await deployedCommand([tenantId, "--user-cost-per-day", "2.50"], { MODEL_PRICES: "" });
    expect(set.code, set.stderr).toBe(0);
    const printed = JSON.parse(set.stdout) as Record<string, unknown>;
    // Stored as set, printed as every cost limit is shown (six places: test/quota-cost-shown.test.ts).
    expect(printed).toMatchObject({ tenantId, tenantSet: { tenant: {}, user: { costPerDay: "2.500000" } } });
    expect(printed.wake).toEqual({ waiting: 1, woken: 1 });
    const stored = await new QuotaLimitStore(stack.deps.ddb, stack.config.table.name).get(tenantId);
    expect(stored.limits).toEqual({ userCostPerDay: "2.50" });
    const lines = aws.requests.map((request) => `${request.method} ${request.path}`);
    expect(lines).toEqual([
      "POST /",
      `GET /2015-03-31/functions/${FUNCTION_NAME}/configuration`,
      "POST /2025-12-01/durable-execution-callbacks/cb%2F7%2B1%3D/succeed",
    ]);
    expect(aws.requests[2]?.body.toString("utf8")).toBe('{"reason":"limits_changed"}');
  });
});

describe("npm run tenant -- limits with no table named, next to a running npm run dev", () => {
  it("says which stack it asked and what failed, and names the dev server's table as --endpoint", async () => {
    // The docs' examples run as written while `npm run dev` runs: no --endpoint, so the stack is asked.
    for (const [key, value] of Object.entries({
      AWS_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: STAND_IN_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: STAND_IN_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_CLOUDFORMATION: aws.endpoint,
    }))
      vi.stubEnv(key, value);
    const devServers = mkdtempSync(join(tmpdir(), "boundloop-dev-servers-"));
    await writeIssuerFile(join(devServers, "dev-issuer-3000.json"), {
      ...(await createDevIssuer()),
      url: "http://127.0.0.1:3000",
      table: { endpoint: "http://127.0.0.1:35203", name: "boundloop" },
    });
    const command = parseLimitsCommand(["limits", "acme", "show"], {});
    try {
      await expect(runLimitsCommand(command, {}, { devServers })).rejects.toThrow(
        "No local table given (--endpoint or DYNAMODB_ENDPOINT), so the deployed stack Boundloop was asked, and that failed: Stack with id Boundloop does not exist. For a stack, set AWS_REGION and credentials (--stack-name to name it); for the table of `npm run dev` on port 3000, pass --endpoint http://127.0.0.1:35203.",
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
