import { Duration, type RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import type { ITableV2 } from "aws-cdk-lib/aws-dynamodb";
import { type IGrantable, ManagedPolicy, PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import {
  type Alias,
  Architecture,
  type CfnFunction,
  Function as LambdaFunction,
  Runtime,
} from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { ConfigSchema } from "../shared/config.js";
import { grantBedrockModel } from "./bedrock-access.js";
import { API_HANDLER, RUNNER_ENTRY } from "./bundle.js";
import { runnerExecutionTimeoutSeconds } from "./execution-timeout.js";
import { functionEnvironment } from "./function-env.js";
import { bundledCode } from "./lambda-code.js";

/**
 * The durable runner's settings.
 * - `invocationTimeoutSeconds`: one invocation (a replay up to the next step, and that step): 5 min, far
 *   above one model call or tool turn; a step cut off at it is retried in a new invocation
 * - `executionTimeoutSeconds`: the whole durable execution with the default configuration (see
 *   {@link runnerExecutionTimeoutSeconds}, which the stack applies to the configuration deployed): the
 *   default 10-minute run with room for the last writes, plus one approval wait of the default
 *   APPROVAL_TIMEOUT_SECONDS (24 h) and the default QUOTA_WAIT_SECONDS (24 h), so a paused run is not
 *   timed out by Lambda while it waits
 * - `retentionDays`: how long Lambda keeps a closed execution's history (and its input, which holds the
 *   prompt): 7 days, enough to investigate a failed run; the run record itself lives RUN_TTL_SECONDS
 * - `aliasName`: the alias the API invokes (durable functions are invoked by qualified ARN)
 * - `memoryMb`: as the API function (see FUNCTION_MEMORY_MB in stack.ts)
 */
export const RUNNER = {
  invocationTimeoutSeconds: 300,
  executionTimeoutSeconds: runnerExecutionTimeoutSeconds(ConfigSchema.parse({})),
  retentionDays: 7,
  aliasName: "live",
  memoryMb: 1024,
} as const;

/** The AWS managed policy for durable function roles (CheckpointDurableExecution, GetDurableExecutionState, logs). */
export const DURABLE_EXECUTION_ROLE_POLICY = "service-role/AWSLambdaBasicDurableExecutionRolePolicy";

/**
 * Props of {@link DurableRunner}: the table and the model access it uses, the stack's shared settings, and
 * `executionTimeoutSeconds` (the configuration's {@link runnerExecutionTimeoutSeconds}; default
 * RUNNER.executionTimeoutSeconds).
 */
export interface DurableRunnerProps {
  executionTimeoutSeconds?: number;
  table: ITableV2;
  tableItemActions: readonly string[];
  /** The OpenAI key's secret (MODEL_PROVIDER openai-compatible); unset for a Bedrock deploy. */
  secretArn?: string | undefined;
  /** The Bedrock model the runner may invoke (MODEL_PROVIDER bedrock, infra/bedrock-access.ts). */
  bedrockModelId?: string | undefined;
  environment: Record<string, string>;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  /** Bundle the OpenTelemetry SDK (infra/lambda-code.ts `bundledCode`); default false. */
  tracingSdk?: boolean;
}

/**
 * The durable runner (functions/runner/handler.ts) with `durableConfig`, a published version and the
 * alias the API invokes, its role and a failed-executions alarm.
 * - Role: the AWS managed durable-execution role policy, item actions on the table, and GetSecretValue on
 *   the OpenAI key's secret or (Bedrock) invoking the one configured model (infra/bedrock-access.ts).
 * - {@link grantStartStop} gives another role (the API function's) exactly: InvokeFunction on the alias,
 *   ListDurableExecutionsByFunction on the function, Stop/GetDurableExecution on its executions.
 * - Alarm: DurableExecutionFailed + DurableExecutionTimedOut ≥ 1 in 5 minutes (AWS/Lambda, by function).
 */
export class DurableRunner extends Construct {
  readonly fn: LambdaFunction;
  readonly alias: Alias;

  constructor(scope: Construct, id: string, props: DurableRunnerProps) {
    super(scope, id);
    const executionTimeoutSeconds = props.executionTimeoutSeconds ?? RUNNER.executionTimeoutSeconds;
    const logs = new LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    const role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `boundloop durable runner: checkpoints, its log group, item actions on the table, ${props.secretArn ? "the OpenAI key" : `invoking ${props.bedrockModelId} on Amazon Bedrock`}`,
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName(DURABLE_EXECUTION_ROLE_POLICY)],
    });
    Validations.of(role).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${DURABLE_EXECUTION_ROLE_POLICY}]`,
      reason:
        "AWSLambdaBasicDurableExecutionRolePolicy is AWS's documented role policy for durable functions (CheckpointDurableExecution, GetDurableExecutionState, logs).",
    });
    logs.grantWrite(role);
    role.addToPolicy(
      new PolicyStatement({ actions: [...props.tableItemActions], resources: [props.table.tableArn] }),
    );
    if (props.secretArn) {
      role.addToPolicy(
        new PolicyStatement({ actions: ["secretsmanager:GetSecretValue"], resources: [props.secretArn] }),
      );
    }
    if (props.bedrockModelId) grantBedrockModel(role, props.bedrockModelId);
    // Approvals are announced on the account's default event bus, and on no other (docs/approvals.md).
    role.addToPolicy(
      new PolicyStatement({
        actions: ["events:PutEvents"],
        resources: [
          Stack.of(this).formatArn({ service: "events", resource: "event-bus", resourceName: "default" }),
        ],
      }),
    );

    this.fn = new LambdaFunction(this, "Function", {
      description: "boundloop durable runner: runs started with Prefer: respond-async, step by step",
      code: bundledCode(RUNNER_ENTRY, { tracingSdk: props.tracingSdk ?? false }),
      handler: API_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: RUNNER.memoryMb,
      timeout: Duration.seconds(RUNNER.invocationTimeoutSeconds),
      durableConfig: {
        executionTimeout: Duration.seconds(executionTimeoutSeconds),
        retentionPeriod: Duration.days(RUNNER.retentionDays),
      },
      role,
      logGroup: logs,
      environment: functionEnvironment({
        ...props.environment,
        DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeoutSeconds),
      }),
    });
    this.alias = this.fn.addAlias(RUNNER.aliasName);

    const metric = (metricName: string) =>
      new Metric({
        namespace: "AWS/Lambda",
        metricName,
        dimensionsMap: { FunctionName: this.fn.functionName },
        statistic: "Sum",
        period: Duration.minutes(5),
      });
    new Alarm(this, "FailedExecutionsAlarm", {
      metric: new MathExpression({
        expression: "FILL(failed, 0) + FILL(timedOut, 0)",
        usingMetrics: {
          failed: metric("DurableExecutionFailed"),
          timedOut: metric("DurableExecutionTimedOut"),
        },
        period: Duration.minutes(5),
        label: "Failed or timed-out durable executions",
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription:
        "A durable run's execution failed or timed out at least once in 5 minutes (the run record says failed or stays running).",
    });
  }

  /**
   * Lets `grantee` start, stop and read this runner's executions and complete their approval callbacks
   * (SendDurableExecutionCallbackSuccess, docs/approvals.md), and nothing else of it: InvokeFunction
   * on the alias only; ListDurableExecutionsByFunction on the function; StopDurableExecution and
   * GetDurableExecution on its executions (`<function ARN>:<version>/durable-execution/<name>/<id>`).
   */
  grantStartStop(grantee: IGrantable & Construct): void {
    const { functionArn } = this.fn;
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [this.alias.functionArn] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ["lambda:ListDurableExecutionsByFunction"], resources: [functionArn] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [
          "lambda:StopDurableExecution",
          "lambda:GetDurableExecution",
          "lambda:SendDurableExecutionCallbackSuccess",
        ],
        resources: [`${functionArn}:*/durable-execution/*`],
      }),
    );
    const runnerArnToken = `<${Stack.of(this).getLogicalId(this.fn.node.defaultChild as CfnFunction)}.Arn>`;
    Validations.of(grantee).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::${runnerArnToken}:*/durable-execution/*]`,
      reason:
        "Durable execution ARNs (<runner ARN>:<version>/durable-execution/<name>/<id>) are made at run time; the wildcard covers only the runner's own executions.",
    });
  }
}
