import {
  Annotations,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import {
  HttpApi,
  HttpMethod,
  HttpNoneAuthorizer,
  HttpStage,
  LogGroupLogDestination,
} from "aws-cdk-lib/aws-apigatewayv2";
import { HttpJwtAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import { AttributeType, Billing, ProjectionType, TableV2 } from "aws-cdk-lib/aws-dynamodb";
import {
  Architecture,
  FunctionUrlAuthType,
  InvokeMode,
  Function as LambdaFunction,
  Runtime,
} from "aws-cdk-lib/aws-lambda";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { CONFIG_DEFAULTS, FUNCTION_TIMEOUT_SECONDS } from "../shared/config.js";
import { LIST_INDEX, TABLE_SCHEMA } from "../shared/store/table.js";
import { bundlesTracingSdk } from "../shared/telemetry/entry.js";
import { BUILT_IN_POOL_IDENTITY } from "../shared/user-roles.js";
import { API_HANDLER, STREAM_ENTRY } from "./bundle.js";
import { API_STREAM_MAX_SECONDS, consoleOrigins } from "./console-wiring.js";
import { DurableRunner } from "./durable-runner.js";
import { runnerExecutionTimeoutSeconds } from "./execution-timeout.js";
import { type FunctionEnvName, functionEnvironment, runtimeEnvironment } from "./function-env.js";
import { bundledCode } from "./lambda-code.js";
import { ROUTES } from "./routes.js";
import {
  type DeploySettings,
  DeploySettingsError,
  type DeploySettingsInput,
  RUN_TIMEOUT_CAPPED_WARNING_ID,
  readDeploySettings,
  TRACING_ADOT_WARNING_ID,
} from "./settings.js";
import { alarms, appRole, openaiKeySecret, TABLE_ITEM_ACTIONS, userPoolOutputs } from "./stack-parts.js";
import { BuiltInUserPool } from "./user-pool.js";

/**
 * Lambda memory in MB, from `npm run bench` (bench/results/latest.md, "Lambda memory"; rule in
 * bench/lambda-memory.ts): the deployed handler peaks at ~85 MB RSS over a 5-cycle run, so memory is not the
 * constraint; CPU is (Lambda gives memory/1769 MB of a vCPU). A cold start that serves a run spends ~0.4 s
 * of CPU (init, then the lazily loaded app, openai and AWS SDK), ~0.48 s with POLICIES (the Cedar engine's
 * first run): ≈ 1.7 s at 512 MB, ≈ 0.8 s at 1024 MB. 1024 MB is the smallest of 256/512/1024/1769 MB
 * holding twice the peak RSS with that under 1.5 s. Warm runs use ~27 ms CPU.
 */
export const FUNCTION_MEMORY_MB = 1024;

/** API Gateway HTTP API's maximum integration timeout, in seconds (see shared/config.ts FUNCTION_TIMEOUT_SECONDS). */
export const API_INTEGRATION_TIMEOUT_SECONDS = 30;

/**
 * The streaming function's timeout in seconds: Lambda's maximum (15 min), which is what a function URL
 * with RESPONSE_STREAM allows a response to last. Streams end with a `retry:` hint before it
 * (STREAM_MAX_SECONDS, 14 min by default), and a streamed synchronous run is bounded by
 * STREAM_RUN_TIMEOUT_MS (10 min by default, the `streamRunTimeoutMs` setting), its RUN_TIMEOUT_MS there.
 */
export const STREAM_FUNCTION_TIMEOUT_SECONDS = 900;

/**
 * Default route throttling of the API stage (requests per second, burst). Deliberately low for a
 * personal account: each run spends model tokens. The account-level default is 10 000 rps / 5 000 burst.
 */
export const API_THROTTLE = { rateLimit: 10, burstLimit: 20 } as const;

/** Retention of the function's and the API's log groups. */
export const LOG_RETENTION = RetentionDays.ONE_MONTH;

/** Props of {@link BoundloopStack}: standard stack props plus deploy settings (override context). */
export interface BoundloopStackProps extends StackProps {
  settings?: DeploySettingsInput;
}

/**
 * What the API function's timeout leaves a synchronous run: its FUNCTION_TIMEOUT_SECONDS less
 * DEADLINE_RESERVE_MS. Nothing left would end every synchronous run `deadline_exceeded` before its first
 * model call, so it fails the synth; less than RUN_TIMEOUT_MS is the {@link RUN_TIMEOUT_CAPPED_WARNING_ID}
 * warning, naming the reserve.
 * @throws DeploySettingsError when DEADLINE_RESERVE_MS is not less than the function's timeout
 */
function checkSyncRunTime(scope: Construct, config: DeploySettings["config"]): void {
  const reserveMs = config.DEADLINE_RESERVE_MS;
  const syncCapMs = FUNCTION_TIMEOUT_SECONDS * 1000 - reserveMs;
  if (syncCapMs <= 0) {
    throw new DeploySettingsError(
      `deadlineReserveMs (DEADLINE_RESERVE_MS): ${reserveMs} ms leaves nothing of the API function's ${FUNCTION_TIMEOUT_SECONDS} s timeout, so every synchronous run would end deadline_exceeded before its first model call: give less than ${FUNCTION_TIMEOUT_SECONDS * 1000} ms.`,
    );
  }
  if (config.RUN_TIMEOUT_MS > syncCapMs) {
    Annotations.of(scope).addWarningV2(
      RUN_TIMEOUT_CAPPED_WARNING_ID,
      `runTimeoutMs ${config.RUN_TIMEOUT_MS} ms is capped by the API function's ${FUNCTION_TIMEOUT_SECONDS} s timeout less deadlineReserveMs (${reserveMs} ms): ` +
        `a synchronous run ends by ${syncCapMs} ms. Longer runs: send Prefer: respond-async (asyncRunTimeoutMs, docs/durable-runs.md).`,
    );
  }
}

/**
 * The boundloop stack: a DynamoDB table, a Secrets Manager secret for the OpenAI key (none with Bedrock), one Lambda
 * (functions/api/handler.ts) behind an HTTP API with a JWT authorizer, the durable runner
 * (functions/runner/handler.ts, infra/durable-runner.ts) the API starts, log groups and alarms; and,
 * unless `jwtIssuer` is given, the built-in Cognito user pool the authorizer trusts (infra/user-pool.ts).
 *
 * Settings come from CDK context (`jwtIssuer`, `jwtAudience`, `consoleCallbackUrls`, `personal`,
 * `openaiApiKeySecretName`, and the runtime settings of infra/settings.ts RUNTIME_SETTINGS, each passed
 * to the functions that read it) or `props.settings`; see infra/settings.ts. With `modelProvider`
 * bedrock (a personal deploy's default) there is no secret: both functions' roles may invoke the one
 * configured Bedrock model (infra/bedrock-access.ts). Synth needs
 * no AWS account, credentials, context lookups or Docker: the handler is bundled by the local esbuild.
 */
export class BoundloopStack extends Stack {
  /** The settings this stack was built with. */
  readonly settings: DeploySettings;

  constructor(scope: Construct, id: string, props: BoundloopStackProps = {}) {
    super(scope, id, props);
    const settings = readDeploySettings(this, props.settings);
    this.settings = settings;
    checkSyncRunTime(this, settings.config);
    if (settings.config.TRACING === "adot") {
      Annotations.of(this).addWarningV2(
        TRACING_ADOT_WARNING_ID,
        "tracing=adot: the functions emit spans to an OpenTelemetry SDK that an ADOT Lambda layer registers, but this stack attaches no layer. " +
          "Add the layer and AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument to both functions, or deploy with tracing=otlp (docs/tracing.md).",
      );
    }
    const removalPolicy = settings.personal ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    // No issuer given: the stack's own Cognito user pool (infra/user-pool.ts) issues the tokens.
    const userPool = settings.builtInUserPool
      ? new BuiltInUserPool(this, "Users", {
          personal: settings.personal,
          removalPolicy,
          logRetention: LOG_RETENTION,
          callbackUrls: settings.consoleCallbackUrls,
        })
      : undefined;
    const jwtIssuer = userPool?.issuer ?? (settings.jwtIssuer as string);
    const jwtAudience = userPool ? [userPool.audience] : (settings.jwtAudience as string[]);
    // The operator console (functions/api/console.ts) signs in at the issuer with this client.
    const consoleClientId = userPool ? userPool.audience : settings.consoleClientId;

    const table = new TableV2(this, "Table", {
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.sortKey, type: AttributeType.STRING },
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      // The listing index (shared/store/table.ts LIST_INDEX), sparse: approvals only, by state.
      globalSecondaryIndexes: [
        {
          indexName: LIST_INDEX.name,
          partitionKey: { name: LIST_INDEX.partitionKey, type: AttributeType.STRING },
          sortKey: { name: LIST_INDEX.sortKey, type: AttributeType.STRING },
          projectionType: ProjectionType[LIST_INDEX.projection],
        },
      ],
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: !settings.personal,
      removalPolicy,
    });

    // A Bedrock deploy signs in with the functions' roles: no secret is created, granted or named.
    const bedrock = settings.modelProvider === "bedrock";
    const secret = bedrock ? undefined : openaiKeySecret(this, settings, removalPolicy);
    const bedrockModelId = bedrock ? settings.bedrockModelId : undefined;

    // What both functions get; each also gets the runtime settings it reads (infra/settings.ts).
    const sharedEnvironment = {
      TABLE_NAME: table.tableName,
      OPENAI_API_KEY_SECRET_NAME: secret?.secretName,
      // The config's defaults, written out so the console shows where the logs and metrics go.
      POWERTOOLS_SERVICE_NAME: CONFIG_DEFAULTS.observability.serviceName,
      POWERTOOLS_METRICS_NAMESPACE: CONFIG_DEFAULTS.observability.metricsNamespace,
      NODE_OPTIONS: "--enable-source-maps",
    };
    // The durable runner of `Prefer: respond-async` runs (infra/durable-runner.ts, docs/durable-runs.md);
    // its execution timeout follows the configured durable run cap and approval timeout.
    const executionTimeoutSeconds = runnerExecutionTimeoutSeconds(settings.config);
    // With tracing off (or left to an ADOT layer) neither bundle holds the OpenTelemetry SDK.
    const tracingSdk = bundlesTracingSdk(settings.config.TRACING);
    const runner = new DurableRunner(this, "Runner", {
      table,
      tableItemActions: TABLE_ITEM_ACTIONS,
      secretArn: secret?.secretArn,
      bedrockModelId,
      executionTimeoutSeconds,
      environment: functionEnvironment({ ...sharedEnvironment, ...runtimeEnvironment(settings, "runner") }),
      logRetention: LOG_RETENTION,
      removalPolicy,
      tracingSdk,
    });

    const functionLogs = new LogGroup(this, "ApiFunctionLogs", { retention: LOG_RETENTION, removalPolicy });

    const role = appRole(this, "ApiFunctionRole", "API function", functionLogs, {
      table,
      secret,
      bedrockModelId,
      runner,
    });

    const fn = new LambdaFunction(this, "ApiFunction", {
      description: "boundloop HTTP API (Hono on Lambda): bounded agent runs, invoices",
      code: bundledCode(undefined, { tracingSdk }),
      handler: API_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: FUNCTION_MEMORY_MB,
      timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS),
      role,
      logGroup: functionLogs,
      environment: functionEnvironment({
        ...sharedEnvironment,
        ...runtimeEnvironment(settings, "api"),
        // The HTTP API buffers a response until it ends: short event streams (each resumed by the
        // client with Last-Event-ID) keep a reader within seconds of a run through it (the console
        // follows runs on the streaming function URL); the streamMaxSeconds setting, when given, wins.
        STREAM_MAX_SECONDS: settings.runtime.STREAM_MAX_SECONDS ?? String(API_STREAM_MAX_SECONDS),
        RUNNER_FUNCTION_ARN: runner.alias.functionArn,
        DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeoutSeconds),
        // /mcp verifies tokens itself against the issuer the JWT authorizer trusts (docs/mcp.md).
        JWT_ISSUER: jwtIssuer,
        // With the built-in pool, only the claims its trigger writes count (shared/user-roles.ts).
        ...(userPool ? BUILT_IN_POOL_IDENTITY : {}),
        ...(consoleClientId ? { CONSOLE_CLIENT_ID: consoleClientId } : {}),
      }),
    });

    // The streaming entry (docs/run-events.md): a function URL with RESPONSE_STREAM, since HTTP APIs
    // buffer responses and stop at 29 s. The URL has no IAM auth: the function verifies the same JWT
    // (issuer, audience, the issuer's JWKS) with jose before any route runs (functions/stream/entry.ts).
    const streamLogs = new LogGroup(this, "StreamFunctionLogs", { retention: LOG_RETENTION, removalPolicy });
    const streamRole = appRole(this, "StreamFunctionRole", "streaming function", streamLogs, {
      table,
      secret,
      bedrockModelId,
      runner,
    });
    const streamFn = new LambdaFunction(this, "StreamFunction", {
      description: "boundloop run event streams (SSE) and streamed runs, behind a function URL",
      code: bundledCode(STREAM_ENTRY, { tracingSdk }),
      handler: API_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: FUNCTION_MEMORY_MB,
      timeout: Duration.seconds(STREAM_FUNCTION_TIMEOUT_SECONDS),
      role: streamRole,
      logGroup: streamLogs,
      environment: functionEnvironment({
        ...sharedEnvironment,
        // It serves the API's app, so it reads the API's settings.
        ...runtimeEnvironment(settings, "api"),
        RUNNER_FUNCTION_ARN: runner.alias.functionArn,
        DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeoutSeconds),
        JWT_ISSUER: jwtIssuer,
        JWT_AUDIENCE: jwtAudience.join(","),
        // With the built-in pool, only the claims its trigger writes count (shared/user-roles.ts).
        ...(userPool ? BUILT_IN_POOL_IDENTITY : {}),
      }),
    });
    const streamUrl = streamFn.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.RESPONSE_STREAM,
    });
    // The console (served by the API function) follows runs on the function URL (infra/console-wiring.ts).
    fn.addEnvironment("CONSOLE_STREAM_URL" satisfies FunctionEnvName, streamUrl.url);

    const apiLogs = new LogGroup(this, "ApiAccessLogs", { retention: LOG_RETENTION, removalPolicy });
    const api = new HttpApi(this, "HttpApi", {
      description: "boundloop HTTP API",
      createDefaultStage: false,
      // Secure by default: a route added without an explicit authorizer gets the JWT authorizer.
      defaultAuthorizer: new HttpJwtAuthorizer("JwtAuthorizer", jwtIssuer, { jwtAudience }),
    });
    const stage = new HttpStage(this, "DefaultStage", {
      httpApi: api,
      stageName: "$default",
      autoDeploy: true,
      throttle: API_THROTTLE,
      accessLogSettings: {
        destination: new LogGroupLogDestination(apiLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: "$context.requestId",
            requestTime: "$context.requestTime",
            ip: "$context.identity.sourceIp",
            routeKey: "$context.routeKey",
            status: "$context.status",
            protocol: "$context.protocol",
            responseLength: "$context.responseLength",
            responseLatency: "$context.responseLatency",
            integrationLatency: "$context.integrationLatency",
            integrationError: "$context.integrationErrorMessage",
            authorizerError: "$context.authorizer.error",
            sub: "$context.authorizer.claims.sub",
          }),
        ),
      },
    });

    // CORS on the function URL for the console's pages, and no other origin (functions/stream/entry.ts).
    streamFn.addEnvironment(
      "CONSOLE_ORIGINS" satisfies FunctionEnvName,
      consoleOrigins(api.apiEndpoint, settings.consoleCallbackUrls).join(","),
    );

    // /mcp's audience is the stack's own URL unless the deployment names another (mcpResourceUrl): the
    // function never derives it from a request's Host (docs/mcp.md).
    if (settings.runtime.MCP_RESOURCE_URL === undefined) {
      fn.addEnvironment("MCP_RESOURCE_URL", `${api.apiEndpoint}/mcp`);
    }
    const integration = new HttpLambdaIntegration("ApiIntegration", fn);
    for (const route of ROUTES) {
      const [created] = api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration,
        ...(route.auth === "jwt" ? {} : { authorizer: new HttpNoneAuthorizer() }),
      });
      if (route.auth !== "jwt" && created) {
        Validations.of(created).acknowledge({
          id: "AwsSolutions-APIG4",
          reason:
            route.auth === "bearer"
              ? `${route.method} ${route.path} verifies its bearer token in the function (OAuth resource server: 401 with resource_metadata, audience = the endpoint's URL).`
              : `${route.method} ${route.path} is public by design: a liveness probe / the API's own description / resource metadata, or the console's page and static assets (its data comes from the authorized routes), no tenant data.`,
        });
      }
    }

    alarms(this, fn, streamFn, api);

    new CfnOutput(this, "ApiUrl", { value: stage.url, description: "Base URL of the HTTP API" });
    new CfnOutput(this, "StreamUrl", {
      value: streamUrl.url,
      description:
        "Function URL of the event streams and streamed runs (bearer JWT verified in the function)",
    });
    new CfnOutput(this, "TableName", { value: table.tableName, description: "DynamoDB table" });
    // `npm run tenant` reads the API function's settings (MODEL_PRICES, RUNNER_FUNCTION_ARN) by its name.
    new CfnOutput(this, "ApiFunctionName", { value: fn.functionName, description: "The API function" });
    if (secret) {
      new CfnOutput(this, "SecretName", {
        value: secret.secretName,
        description: "Secrets Manager secret holding the OpenAI API key (set its value after deploy)",
      });
    } else {
      new CfnOutput(this, "BedrockModelId", {
        value: settings.bedrockModelId,
        description: "Amazon Bedrock model the functions invoke (turn on its access in the Bedrock console)",
      });
    }
    new CfnOutput(this, "JwtIssuer", { value: jwtIssuer, description: "Issuer the API trusts" });
    if (userPool) userPoolOutputs(this, userPool, stage.url);
  }
}
