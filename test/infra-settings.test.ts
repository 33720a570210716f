import { Annotations, Match } from "aws-cdk-lib/assertions";
import { CONTEXT_ENV } from "aws-cdk-lib/cx-api";
import { describe, expect, it } from "vitest";
import { createApp } from "../functions/api/app.js";
import { isPublicRoute, PUBLIC_ROUTES, ROUTES } from "../infra/routes.js";
import {
  DeploySettingsError,
  RUN_TIMEOUT_CAPPED_WARNING_ID,
  RUNTIME_SETTINGS,
  TRACING_ADOT_WARNING_ID,
} from "../infra/settings.js";
import { ConfigSchema, loadConfig } from "../shared/config.js";
import {
  appFunctionsEnv,
  COGNITO_ISSUER,
  envOf,
  named,
  plainEnv,
  type Resource,
  runnerEnvOf,
  sharedDeployment,
  synth,
} from "./support/infra.js";
import { runScript } from "./support/scripts.js";

/** The stack's runtime settings (CDK context → the functions' environment) and its routes against the app's and the dev server's. */

// Built once per file: a deployment for a shared account with a real (Cognito) issuer and two audiences.
const { resources, ofType } = sharedDeployment();

describe("the stack's runtime settings (CDK context → the functions' environment)", () => {
  const APPROVALS = '{"recordInvoice":{"GBP":"1000.00"}}';

  it("turns approvals on for both functions; the runner's execution timeout follows the configured timeouts", () => {
    const { template: approvals } = synth({
      jwtIssuer: COGNITO_ISSUER,
      jwtAudience: "client-a",
      approvalRules: APPROVALS,
      approvalTimeoutSeconds: "172800",
      asyncRunTimeoutMs: "1800000",
      maxCycles: "3",
      modelMaxTokens: "2048",
    });
    const all = approvals.toJSON().Resources as Record<string, Resource>;
    const api = envOf(all);
    const runner = runnerEnvOf(all);
    // 1800 s of run + 300 s margin + one approval wait of 172 800 s + the default budget wait (86 400 s).
    const executionTimeout = 1800 + 300 + 172_800 + 86_400;
    expect(plainEnv(api)).toEqual({
      APPROVAL_RULES: APPROVALS,
      APPROVAL_TIMEOUT_SECONDS: "172800",
      ASYNC_RUN_TIMEOUT_MS: "1800000",
      MAX_CYCLES: "3",
      MODEL_MAX_TOKENS: "2048",
      DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeout),
      // /mcp verifies tokens itself, against the issuer the HTTP API's authorizer trusts.
      JWT_ISSUER: COGNITO_ISSUER,
      NODE_OPTIONS: "--enable-source-maps",
      POWERTOOLS_METRICS_NAMESPACE: "boundloop",
      POWERTOOLS_SERVICE_NAME: "boundloop",
      // Short event streams through the buffering HTTP API (the console follows runs with them).
      STREAM_MAX_SECONDS: "2",
    });
    // The runner reads the approval rules, their timeout and the model's limit; a durable run's limits
    // come in its input from the API, so the runner gets no MAX_CYCLES.
    expect(plainEnv(runner)).toEqual({
      APPROVAL_RULES: APPROVALS,
      APPROVAL_TIMEOUT_SECONDS: "172800",
      MODEL_MAX_TOKENS: "2048",
      DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeout),
      NODE_OPTIONS: "--enable-source-maps",
      POWERTOOLS_METRICS_NAMESPACE: "boundloop",
      POWERTOOLS_SERVICE_NAME: "boundloop",
    });
    expect(named(all, "AWS::Lambda::Function", "RunnerFunction").Properties.DurableConfig).toMatchObject({
      ExecutionTimeout: executionTimeout,
    });
    // What the functions make of it at cold start: approvals on, the whole 30-minute durable run allowed.
    const config = loadConfig(plainEnv(api));
    expect(config.approvals).toEqual({
      rules: { recordInvoice: { GBP: "1000.00" } },
      timeoutSeconds: 172_800,
    });
    expect(config.durable.runTimeoutMs).toBe(1_800_000);
    expect(loadConfig(plainEnv(runner)).approvals.timeoutSeconds).toBe(172_800);
  });

  it("takes cdk.json's typed values (objects, numbers, booleans, lists) and props", () => {
    const { template: typed } = synth(
      {
        approvalRules: { recordInvoice: { BDT: "50000" } },
        maxCycles: 4,
        idempotencyKeyRequired: true,
        tenantClaims: ["custom:tenant", "tenant_id"],
        jwtIssuer: "https://issuer.example.com",
        jwtAudience: "boundloop-api",
      },
      { settings: { logLevel: "debug", openaiModel: "gpt-4.1-mini" } },
    );
    const env = plainEnv(envOf(typed.toJSON().Resources as Record<string, Resource>));
    expect(env).toMatchObject({
      APPROVAL_RULES: '{"recordInvoice":{"BDT":"50000"}}',
      MAX_CYCLES: "4",
      IDEMPOTENCY_KEY_REQUIRED: "true",
      TENANT_CLAIMS: "custom:tenant,tenant_id",
      POWERTOOLS_LOG_LEVEL: "debug",
      OPENAI_MODEL: "gpt-4.1-mini",
    });
    expect(loadConfig(env).identity.tenantClaims).toEqual(["custom:tenant", "tenant_id"]);
  });

  it("refuses claim settings with the built-in pool, whose trigger decides the claims", () => {
    expect(() => synth({ tenantClaims: "custom:tenant" })).toThrow(/tenantClaims.*built-in user pool/);
    expect(() => synth({ permissionClaims: "groups" })).toThrow(/permissionClaims.*built-in user pool/);
    expect(() => synth({ permissionListClaims: "groups" })).toThrow(
      /permissionListClaims.*built-in user pool/,
    );
  });

  it("gives /mcp the stack's own URL as its audience, or mcpResourceUrl; never a request's Host", () => {
    // Default: the HTTP API's endpoint + /mcp, resolved by CloudFormation.
    expect(envOf(resources).MCP_RESOURCE_URL).toEqual({
      "Fn::Join": ["", [{ "Fn::GetAtt": [expect.stringMatching(/^HttpApi/), "ApiEndpoint"] }, "/mcp"]],
    });
    const custom = synth({
      jwtIssuer: COGNITO_ISSUER,
      jwtAudience: "client-a",
      mcpResourceUrl: "https://api.example.com/mcp",
      jwtAlgorithms: "RS256,ES256",
      permissionListClaims: "groups",
    });
    const env = envOf(custom.template.toJSON().Resources as Record<string, Resource>);
    expect(env).toMatchObject({
      MCP_RESOURCE_URL: "https://api.example.com/mcp",
      JWT_ALGORITHMS: "RS256,ES256",
      PERMISSION_LIST_CLAIMS: "groups",
    });
    expect(loadConfig(plainEnv(env)).auth).toMatchObject({
      mcpResourceUrl: "https://api.example.com/mcp",
      algorithms: ["RS256", "ES256"],
    });
    // Validated at synth by the schema the function parses at cold start.
    const own = { jwtIssuer: COGNITO_ISSUER, jwtAudience: "client-a" };
    expect(() => synth({ ...own, mcpResourceUrl: "https://api.example.com/mcp#frag" })).toThrow(
      /mcpResourceUrl \(MCP_RESOURCE_URL\)/,
    );
    expect(() => synth({ ...own, jwtAlgorithms: "HS256" })).toThrow(/jwtAlgorithms \(JWT_ALGORITHMS\)/);
    expect(() => synth({ ...own, permissionListClaims: "scope" })).toThrow(
      /permissionListClaims \(PERMISSION_LIST_CLAIMS\): .*RFC 6749/,
    );
  });

  it("gives the functions that verify tokens themselves an issuer's key set URL (jwtJwksUrl), which an issuer such as Keycloak does not serve at <issuer>/.well-known/jwks.json", () => {
    const keycloak = "https://login.example.com/realms/acme";
    const certs = `${keycloak}/protocol/openid-connect/certs`;
    const envs = appFunctionsEnv({ jwtIssuer: keycloak, jwtAudience: "boundloop-api", jwtJwksUrl: certs });
    // The API function (/mcp) and the streaming function verify tokens; the runner verifies none.
    const verifying = envs.filter((env) => env.JWT_ISSUER === keycloak);
    expect(verifying).toHaveLength(2);
    for (const env of verifying) {
      expect(env.JWT_JWKS_URL).toBe(certs);
      expect(loadConfig(plainEnv(env)).auth.jwksUrl).toBe(certs);
    }
    // Validated by the variable's own schema, and only with your own issuer: the built-in pool's keys
    // are where Cognito serves them.
    expect(() =>
      appFunctionsEnv({ jwtIssuer: keycloak, jwtAudience: "a", jwtJwksUrl: "ftp://x/keys" }),
    ).toThrow(/jwtJwksUrl \(JWT_JWKS_URL\): must be an http:\/\/ or https:\/\/ URL/);
    expect(() => synth({ jwtJwksUrl: certs })).toThrow(/jwtJwksUrl: the built-in user pool decides/);
  });

  it("refuses at synth what the functions would refuse at cold start, naming the context key and the variable", () => {
    expect(() => synth({ approvalRules: '{"recordInvoice":{"GBP":"a lot"}}' })).toThrow(
      /approvalRules \(APPROVAL_RULES\): .*decimal strings/,
    );
    expect(() => synth({ approvalRules: "{not json" })).toThrow(
      /approvalRules \(APPROVAL_RULES\): must be a JSON object/,
    );
    expect(() => synth({ approvalTimeoutSeconds: "0" })).toThrow(
      /approvalTimeoutSeconds \(APPROVAL_TIMEOUT_SECONDS\)/,
    );
    expect(() => synth({ maxCycles: "51" })).toThrow(/maxCycles \(MAX_CYCLES\)/);
    expect(() => synth({ modelMaxTokens: "many" })).toThrow(DeploySettingsError);
    expect(() => synth({ logLevel: "loud" })).toThrow(/logLevel \(POWERTOOLS_LOG_LEVEL\)/);
    expect(() => synth({ openaiBaseUrl: "not a url" })).toThrow(/openaiBaseUrl \(OPENAI_BASE_URL\)/);
    // The quotas' limits and price table, by the same schemas (shared/config/quotas.ts).
    expect(() => synth({ tenantTokensPerDay: "-1" })).toThrow(/tenantTokensPerDay \(TENANT_TOKENS_PER_DAY\)/);
    expect(() => synth({ userCostPerDay: "1,50" })).toThrow(/userCostPerDay \(USER_COST_PER_DAY\)/);
    expect(() => synth({ modelPrices: '{"m":{"inputPerMillion":"cheap"}}' })).toThrow(
      /modelPrices \(MODEL_PRICES\)/,
    );
    expect(() => synth({ tenantCostPerDay: "5.00" })).toThrow(
      /TENANT_COST_PER_DAY needs a price for the model/,
    );
    // The stack grants the secret by name: an ARN is refused, saying so.
    expect(() =>
      synth({
        openaiApiKeySecretName:
          "arn:aws:secretsmanager:eu-west-2:123456789012:secret:boundloop/openai-AbCdEf",
      }),
    ).toThrow(
      "Invalid deploy settings: openaiApiKeySecretName: must be the secret's name in this Region, not its ARN",
    );
    // A floor no call can reach ends every run before its first model call.
    expect(() => synth({ minCompletionTokens: "5000" })).toThrow(
      /MIN_COMPLETION_TOKENS \(5000 tokens\) must be at most MODEL_MAX_TOKENS \(4096 tokens\).*MODEL_MAX_TOKENS is -c modelMaxTokens, MIN_COMPLETION_TOKENS is -c minCompletionTokens/,
    );
  });

  it("refuses a setting name it does not know (a typo, or the variable's name) instead of deploying without it", () => {
    expect(() => synth({ maxCycle: "3" })).toThrow(
      "Invalid deploy settings: maxCycle: not a deploy setting (did you mean maxCycles?)",
    );
    expect(() => synth({ MAX_CYCLES: "3", approvalrules: "{}" })).toThrow(
      "Invalid deploy settings: MAX_CYCLES: not a deploy setting (did you mean maxCycles?); approvalrules: not a deploy setting (did you mean approvalRules?)",
    );
    expect(() => synth({ fooBar: "1" })).toThrow(
      "Invalid deploy settings: fooBar: not a deploy setting (docs/deploy.md lists them)",
    );
    // The CDK's own keys (the CLI's, feature flags, cdk.json's cli-telemetry) are not settings of ours.
    const cdkKeys = {
      "cli-telemetry": false,
      "aws:cdk:enable-path-metadata": true,
      "@aws-cdk/core:failSynthOnValidationErrors": false,
    };
    expect(plainEnv(envOf(synth({ ...cdkKeys, maxCycles: "3" }).template.toJSON().Resources))).toMatchObject({
      MAX_CYCLES: "3",
    });
  });

  it("refuses a run retention shorter than the durable execution timeout the stack itself sets, which every function would refuse at cold start", () => {
    // The stack gives the functions DURABLE_EXECUTION_TIMEOUT_SECONDS = 600 + 300 + 86 400 + 86 400 by
    // default; a record kept 100 000 s would expire under a durable run still going.
    expect(() => synth({ runTtlSeconds: "100000" })).toThrow(
      /RUN_TTL_SECONDS \(100000 s\) must exceed DURABLE_EXECUTION_TIMEOUT_SECONDS \(173700 s\).*runTtlSeconds.*asyncRunTimeoutMs \+ 300 s \+ approvalTimeoutSeconds \+ quotaWaitSeconds/,
    );
    // Two waits each inside the default 30-day retention, whose sum is not.
    expect(() => synth({ approvalTimeoutSeconds: "1500000", quotaWaitSeconds: "1500000" })).toThrow(
      /must exceed DURABLE_EXECUTION_TIMEOUT_SECONDS \(3000900 s\)/,
    );
    // Just above it: synthesized, and each function's environment loads as it will at cold start.
    const envs = appFunctionsEnv({ runTtlSeconds: "173701" });
    expect(envs).toHaveLength(3);
    for (const env of envs) {
      expect(env.DURABLE_EXECUTION_TIMEOUT_SECONDS).toBe("173700");
      expect(loadConfig(plainEnv(env)).runs.ttlSeconds).toBe(173_701);
    }
  });

  it("the cdk.json app (npx tsx infra/app.ts) prints invalid settings one per line on stderr, exit 1, no stack trace", {
    timeout: 60_000,
  }, async () => {
    // The context as `npx cdk synth -c maxCycles=51 -c modelMaxTokens=many` hands it to the app; the
    // settings fail in the stack's constructor, before anything is bundled.
    const { code, stdout, stderr } = await runScript("tsx", ["infra/app.ts"], {
      [CONTEXT_ENV]: JSON.stringify({ maxCycles: "51", modelMaxTokens: "many" }),
    });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toEqual([
      "boundloop: invalid deploy settings:",
      "  modelMaxTokens (MODEL_MAX_TOKENS): must be a whole number in plain decimal digits, e.g. 300 (no spaces, sign, exponent, fraction or 0x)",
      "  maxCycles (MAX_CYCLES): Too big: expected number to be <=50",
    ]);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr).not.toContain("throw new");
  });

  it("warns at synth when runTimeoutMs is more than the API function's timeout allows", () => {
    const capped = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", runTimeoutMs: "120000" });
    const warnings = Annotations.fromStack(capped.stack).findWarning(
      "*",
      Match.stringLikeRegexp("runTimeoutMs"),
    );
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry)).toContain(RUN_TIMEOUT_CAPPED_WARNING_ID);
    expect(JSON.stringify(warnings[0]?.entry)).toContain("respond-async");
    const fits = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", runTimeoutMs: "20000" });
    Annotations.fromStack(fits.stack).hasNoWarning("*", Match.anyValue());
  });

  it("refuses a deadlineReserveMs that leaves nothing of the API function's timeout, and names it where it caps the run timeout", () => {
    // Every synchronous run on the API function would end deadline_exceeded before its first model call.
    expect(() => synth({ deadlineReserveMs: "30000" })).toThrow(
      "Invalid deploy settings: deadlineReserveMs (DEADLINE_RESERVE_MS): 30000 ms leaves nothing of the API function's 29 s timeout, so every synchronous run would end deadline_exceeded before its first model call: give less than 29000 ms.",
    );
    expect(() => synth({ deadlineReserveMs: "29000" })).toThrow(/deadlineReserveMs \(DEADLINE_RESERVE_MS\)/);
    // A reserve that leaves a little: the warning names the reserve that caps the run, and what is left.
    const tight = synth({ deadlineReserveMs: "28000" });
    const warnings = Annotations.fromStack(tight.stack).findWarning(
      "*",
      Match.stringLikeRegexp("runTimeoutMs"),
    );
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry)).toContain(
      "runTimeoutMs 25000 ms is capped by the API function's 29 s timeout less deadlineReserveMs (28000 ms): a synchronous run ends by 1000 ms.",
    );
  });

  it("off by default: no function gets a tracing variable", () => {
    const envs = appFunctionsEnv({});
    expect(envs).toHaveLength(3);
    for (const env of envs) {
      expect(env.TRACING).toBeUndefined();
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    }
  });

  it("tracing=adot warns at synth that the stack attaches no ADOT layer; otlp does not warn", () => {
    const adot = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", tracing: "adot" });
    const warnings = Annotations.fromStack(adot.stack).findWarning("*", Match.stringLikeRegexp("ADOT"));
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry)).toContain(TRACING_ADOT_WARNING_ID);
    expect(JSON.stringify(warnings[0]?.entry)).toContain("AWS_LAMBDA_EXEC_WRAPPER");
    const otlp = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", tracing: "otlp" });
    Annotations.fromStack(otlp.stack).hasNoWarning("*", Match.anyValue());
  });

  it("tracing, otlpEndpoint and traceContent reach every function that runs the app; a value TRACING refuses fails the synth", () => {
    const envs = appFunctionsEnv({ tracing: "otlp", otlpEndpoint: "https://collector.example.com:4318" });
    // The API, the durable runner and the streaming function.
    expect(envs).toHaveLength(3);
    for (const env of envs) {
      expect(env).toMatchObject({
        TRACING: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example.com:4318",
      });
      expect(env.TRACE_CONTENT).toBeUndefined();
    }
    for (const env of appFunctionsEnv({ tracing: "otlp", traceContent: true })) {
      expect(env).toMatchObject({ TRACING: "otlp", TRACE_CONTENT: "true" });
    }
    expect(() => synth({ tracing: "xray" })).toThrow(/tracing \(TRACING\)/);
    expect(() => synth({ tracing: "otlp", otlpEndpoint: "not a url" })).toThrow(
      /otlpEndpoint \(OTEL_EXPORTER_OTLP_ENDPOINT\)/,
    );
  });

  it("has one context key per setting, each a variable of the config schema that the stack does not own", () => {
    const contexts = RUNTIME_SETTINGS.map((setting) => setting.context);
    expect(new Set(contexts).size).toBe(contexts.length);
    for (const setting of RUNTIME_SETTINGS) {
      expect(Object.keys(ConfigSchema.shape), setting.env).toContain(setting.env);
      expect(setting.functions, setting.context).toContain("api");
    }
    expect(RUNTIME_SETTINGS.map((setting) => setting.env)).not.toContain("TABLE_NAME");
    expect(RUNTIME_SETTINGS.map((setting) => setting.env)).not.toContain("DURABLE_EXECUTION_TIMEOUT_SECONDS");
  });
});

describe("the routes of the stack, the app and the local dev server", () => {
  it("are the same set, and exactly the routes the app documents as public skip the JWT authorizer everywhere", async () => {
    // The app serves its own OpenAPI document without building any client.
    const app = createApp({
      config: loadConfig({}),
      load: () => {
        throw new Error("no dependencies are needed to serve /openapi.json");
      },
    });
    const document = (await (await app.request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const byRoute = (a: { route: string }, b: { route: string }) => a.route.localeCompare(b.route);
    // "public" here: no gateway authorizer. /mcp's `mcp` scheme is verified by the function itself.
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({
        route: `${method.toUpperCase()} ${path}`,
        public: (operation.security ?? []).every((scheme) => Object.keys(scheme as object).join() === "mcp"),
      })),
    );
    // The document describes the API; it is not one of its own operations. Nor are the console's page
    // and its assets (functions/api/console.ts), which a browser fetches without a token.
    documented.push(
      { route: "GET /openapi.json", public: true },
      { route: "GET /console", public: true },
      { route: "GET /console/assets/{file}", public: true },
    );

    // The stack as synthesized: each route's key and whether it has an authorizer.
    const deployed = ofType("AWS::ApiGatewayV2::Route").map((route) => ({
      route: String(route.Properties.RouteKey),
      public: route.Properties.AuthorizationType === "NONE",
    }));
    const declared = ROUTES.map((route) => ({
      route: `${route.method} ${route.path}`,
      public: route.auth !== "jwt",
    }));
    // The dev server (npm run dev) asks for a token on every route but these.
    const local = documented.map(({ route }) => ({ route, public: PUBLIC_ROUTES.has(route) }));

    // docs/policies.md promises HEAD /v1/policies (its ETag): the gateway routes it as it routes GET.
    expect(deployed).toContainEqual({ route: "HEAD /v1/policies", public: false });
    expect(documented.sort(byRoute).length).toBeGreaterThan(PUBLIC_ROUTES.size);
    expect(deployed.sort(byRoute)).toEqual(documented);
    expect(declared.sort(byRoute)).toEqual(documented);
    expect(local.sort(byRoute)).toEqual(documented);
    expect([...PUBLIC_ROUTES].sort()).toEqual(
      [
        "GET /.well-known/agent-card.json",
        "GET /console",
        "GET /console/assets/{file}",
        "GET /healthz",
        "GET /openapi.json",
        "POST /mcp",
        "GET /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
      ].sort(),
    );
    expect(isPublicRoute("GET", "/console/assets/app-ABCDEFGH.js")).toBe(true);
    expect(isPublicRoute("GET", "/console/assets/a/b.js")).toBe(false);
    expect(isPublicRoute("POST", "/console")).toBe(false);
  });
});
