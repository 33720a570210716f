/**
 * `npm run deploy`'s checks before cdk: no Region, no credentials, credentials AWS
 * refuses and an unreachable endpoint each end in one line with the fix within seconds, before any
 * synth; working credentials say whether the stack is created or updated, and a Bedrock deploy which
 * model to enable where. CloudFormation is a local HTTP server speaking its query protocol's errors.
 */
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { bedrockModelOf, deployPreflight, readCdkArgs } from "../local/deploy-preflight.js";
import { runScript } from "./support/scripts.js";

const home = mkdtempSync(join(tmpdir(), "boundloop-aws-"));
writeFileSync(join(home, "config"), "");
writeFileSync(join(home, "credentials"), "");

/** An environment with no AWS settings at all: empty config files, no instance metadata. */
const BARE_AWS_ENV: Record<string, string> = {
  AWS_CONFIG_FILE: join(home, "config"),
  AWS_SHARED_CREDENTIALS_FILE: join(home, "credentials"),
  AWS_EC2_METADATA_DISABLED: "true",
};
const CLEARED = [
  "AWS_PROFILE",
  "AWS_DEFAULT_PROFILE",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_CLOUDFORMATION",
  "AWS_ENDPOINT_URL_BEDROCK",
];

let answer: { status: number; code: string; message: string };
let cloudformation: Server;
let endpoint: string;
/** Bedrock's control plane (REST JSON): what GetFoundationModelAvailability answers, and the paths asked. */
let bedrockAnswer: { status: number; body: Record<string, unknown>; errorType?: string };
const bedrockPaths: string[] = [];
let bedrock: Server;
let bedrockEndpoint: string;
beforeAll(async () => {
  bedrock = createServer((req, res) => {
    req.resume();
    bedrockPaths.push(decodeURIComponent(req.url ?? ""));
    res.writeHead(bedrockAnswer.status, {
      "content-type": "application/json",
      ...(bedrockAnswer.errorType ? { "x-amzn-errortype": bedrockAnswer.errorType } : {}),
    });
    res.end(JSON.stringify(bedrockAnswer.body));
  });
  bedrock.listen(0, "127.0.0.1");
  await once(bedrock, "listening");
  bedrockEndpoint = `http://127.0.0.1:${(bedrock.address() as { port: number }).port}`;
  cloudformation = createServer((req, res) => {
    req.resume();
    res.writeHead(answer.status, { "content-type": "text/xml" });
    res.end(
      `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>${answer.code}</Code><Message>${answer.message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`,
    );
  });
  cloudformation.listen(0, "127.0.0.1");
  await once(cloudformation, "listening");
  endpoint = `http://127.0.0.1:${(cloudformation.address() as { port: number }).port}`;
});
afterAll(() => {
  cloudformation.close();
  bedrock.close();
});

beforeEach(() => {
  for (const name of CLEARED) vi.stubEnv(name, undefined);
  for (const [name, value] of Object.entries(BARE_AWS_ENV)) vi.stubEnv(name, value);
});
afterEach(() => {
  vi.unstubAllEnvs();
});

/** Region and keys set, CloudFormation at the local server. */
function withKeys(): void {
  vi.stubEnv("AWS_REGION", "eu-west-2");
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  vi.stubEnv("AWS_ENDPOINT_URL_CLOUDFORMATION", endpoint);
  vi.stubEnv("AWS_ENDPOINT_URL_BEDROCK", bedrockEndpoint);
}

/** GetFoundationModelAvailability's answer when every part of it says yes. */
const AVAILABLE = {
  modelId: "openai.gpt-oss-120b-1:0",
  agreementAvailability: { status: "AVAILABLE" },
  authorizationStatus: "AUTHORIZED",
  entitlementAvailability: "AVAILABLE",
  regionAvailability: "AVAILABLE",
};

describe("npm run deploy's checks", () => {
  it("no Region: says how to set one", async () => {
    expect(await deployPreflight()).toEqual({
      ok: false,
      problem:
        "no AWS Region: export AWS_REGION=<region> (e.g. eu-west-2), or set one in your profile (aws configure set region <region>), then npm run deploy again.",
    });
  });

  it("a Region but no credentials: says where credentials come from", async () => {
    vi.stubEnv("AWS_REGION", "eu-west-2");
    const outcome = await deployPreflight();
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.problem).toMatch(
      /^no AWS credentials \(.+\): export AWS_PROFILE=<profile> \(after aws configure sso or aws configure\), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then npm run deploy again\.$/,
    );
  });

  it.each([
    [
      403,
      "ExpiredToken",
      "The security token included in the request is expired",
      /^the AWS credentials have expired: renew them/,
    ],
    [
      403,
      "InvalidClientTokenId",
      "The security token included in the request is invalid.",
      /^AWS does not know these credentials \(InvalidClientTokenId\)/,
    ],
    [
      403,
      "AccessDenied",
      "User: arn:aws:iam::1:user/x is not authorized",
      /^these credentials may not call CloudFormation in eu-west-2 \(AccessDenied\)/,
    ],
  ])(
    "credentials AWS refuses (%i %s): one line naming the cause",
    async (status, code, message, expected) => {
      withKeys();
      answer = { status, code, message };
      const outcome = await deployPreflight();
      expect(outcome.ok).toBe(false);
      expect(!outcome.ok && outcome.problem).toMatch(expected);
    },
  );

  it("an endpoint that cannot be reached: says so, with the Region", async () => {
    withKeys();
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as { port: number }).port;
    closed.close();
    vi.stubEnv("AWS_ENDPOINT_URL_CLOUDFORMATION", `http://127.0.0.1:${port}`);
    const outcome = await deployPreflight();
    expect(!outcome.ok && outcome.problem).toMatch(
      /^cannot reach CloudFormation in eu-west-2 \(.*ECONNREFUSED.*\)/,
    );
  });

  it("working credentials and no stack yet: the deploy creates it; a Bedrock deploy checks the model is available there", async () => {
    withKeys();
    answer = { status: 400, code: "ValidationError", message: "Stack with id Boundloop does not exist" };
    bedrockAnswer = { status: 200, body: AVAILABLE };
    const asked = bedrockPaths.length;
    expect(await deployPreflight({ bedrockModelId: "openai.gpt-oss-120b-1:0" })).toEqual({
      ok: true,
      lines: [
        "deploy: AWS credentials work in eu-west-2; the deploy creates it (stack Boundloop).",
        "deploy: openai.gpt-oss-120b-1:0 is available to this account on Amazon Bedrock in eu-west-2.",
      ],
    });
    expect(bedrockPaths.slice(asked)).toEqual(["/foundation-model-availability/openai.gpt-oss-120b-1:0"]);
    // An OpenAI-compatible deploy asks Bedrock nothing.
    expect((await deployPreflight()).ok).toBe(true);
    expect(bedrockPaths).toHaveLength(asked + 1);
  });

  it.each([
    [
      "not served in the Region",
      { regionAvailability: "NOT_AVAILABLE" },
      "Amazon Bedrock does not serve openai.gpt-oss-120b-1:0 in eu-west-2: deploy to a Region that serves it (docs/deploy.md#use-bedrock), or choose another model with -c bedrockModelId=<id>, then npm run deploy again.",
    ],
    [
      "not authorized",
      { authorizationStatus: "NOT_AUTHORIZED" },
      "this account may not use openai.gpt-oss-120b-1:0 on Amazon Bedrock in eu-west-2 (not authorized): request access in the Bedrock console's Model access page in eu-west-2 (docs/deploy.md#use-bedrock), or ask the account's administrator to allow it, then npm run deploy again.",
    ],
    [
      "access not enabled",
      { entitlementAvailability: "NOT_AVAILABLE" },
      "model access to openai.gpt-oss-120b-1:0 is not enabled on Amazon Bedrock in eu-west-2: enable it in the Bedrock console's Model access page in eu-west-2 (docs/deploy.md#use-bedrock), then npm run deploy again.",
    ],
    [
      "the agreement not accepted",
      { agreementAvailability: { status: "NOT_AVAILABLE", errorMessage: "EULA not accepted" } },
      "model access to openai.gpt-oss-120b-1:0 is not enabled on Amazon Bedrock in eu-west-2 (EULA not accepted): enable it in the Bedrock console's Model access page in eu-west-2 (docs/deploy.md#use-bedrock), then npm run deploy again.",
    ],
    [
      "access pending",
      { agreementAvailability: { status: "PENDING" } },
      "access to openai.gpt-oss-120b-1:0 on Amazon Bedrock in eu-west-2 is still pending: wait for it in the Bedrock console's Model access page in eu-west-2 (docs/deploy.md#use-bedrock), then npm run deploy again.",
    ],
  ])(
    "a Bedrock model the account cannot call (%s): one line with the fix, before any synth",
    async (_, part, problem) => {
      withKeys();
      answer = { status: 400, code: "ValidationError", message: "Stack with id Boundloop does not exist" };
      bedrockAnswer = { status: 200, body: { ...AVAILABLE, ...part } };
      expect(await deployPreflight({ bedrockModelId: "openai.gpt-oss-120b-1:0" })).toEqual({
        ok: false,
        problem,
      });
    },
  );

  it("a cross-Region inference profile is checked as its model; an unknown model id ends the deploy; a denied check goes on with a line", async () => {
    withKeys();
    answer = { status: 400, code: "ValidationError", message: "Stack with id Boundloop does not exist" };
    bedrockAnswer = { status: 200, body: AVAILABLE };
    const asked = bedrockPaths.length;
    const profile = await deployPreflight({ bedrockModelId: "eu.amazon.nova-pro-v1:0" });
    expect(profile.ok && profile.lines[1]).toBe(
      "deploy: eu.amazon.nova-pro-v1:0 is available to this account on Amazon Bedrock in eu-west-2.",
    );
    expect(bedrockPaths.slice(asked)).toEqual(["/foundation-model-availability/amazon.nova-pro-v1:0"]);

    bedrockAnswer = {
      status: 404,
      errorType: "ResourceNotFoundException",
      body: { message: "The model no.such-model-v1:0 does not exist" },
    };
    expect(await deployPreflight({ bedrockModelId: "no.such-model-v1:0" })).toEqual({
      ok: false,
      problem:
        "Amazon Bedrock in eu-west-2 knows no model no.such-model-v1:0 (ResourceNotFoundException): check -c bedrockModelId (docs/deploy.md#use-bedrock), then npm run deploy again.",
    });

    bedrockAnswer = {
      status: 403,
      errorType: "AccessDeniedException",
      body: { message: "not authorized to perform: bedrock:GetFoundationModelAvailability" },
    };
    const denied = await deployPreflight({ bedrockModelId: "openai.gpt-oss-120b-1:0" });
    expect(denied.ok && denied.lines[1]).toBe(
      "deploy: could not check access to openai.gpt-oss-120b-1:0 on Amazon Bedrock in eu-west-2 (AccessDeniedException): if runs answer MODEL_UNAVAILABLE, enable it in the Bedrock console's Model access page (docs/deploy.md#use-bedrock).",
    );
  });

  it("reads the provider, model and profile from cdk's command line as the stack does", () => {
    expect(bedrockModelOf(readCdkArgs(["-c", "personal=true"]).context)).toBe("openai.gpt-oss-120b-1:0");
    expect(bedrockModelOf(readCdkArgs([]).context)).toBeUndefined();
    expect(
      bedrockModelOf(
        readCdkArgs(["--context=modelProvider=bedrock", "-c", "bedrockModelId=qwen.qwen3-32b-v1:0"]).context,
      ),
    ).toBe("qwen.qwen3-32b-v1:0");
    expect(
      bedrockModelOf(readCdkArgs(["-c", "personal=true", "-c", "modelProvider=openai-compatible"]).context),
    ).toBeUndefined();
    expect(readCdkArgs(["--profile", "sandbox"]).profile).toBe("sandbox");
  });

  it("npm run deploy without credentials stops with that one line, before cdk synthesizes anything", {
    timeout: 60_000,
  }, async () => {
    // A user's shell, not the suite's: on Node 20 the AWS SDK would add its Node 22 notice to stderr.
    vi.stubEnv("AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED", undefined);
    const env = Object.fromEntries(CLEARED.map((name) => [name, ""]));
    const { code, stdout, stderr } = await runScript("tsx", ["local/deploy.ts", "-c", "personal=true"], {
      ...env,
      ...BARE_AWS_ENV,
      AWS_REGION: "eu-west-2",
    });
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/^deploy: no AWS credentials \(/);
    expect(stdout).toBe("");
  });
});
