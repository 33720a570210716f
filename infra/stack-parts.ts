/**
 * Parts of the stack (infra/stack.ts) built by plain functions on it: the built-in pool's outputs, the
 * app functions' hand-written role, the OpenAI key's secret and the alarms. Each builds its constructs
 * with the stack as their scope, so their ids (and the template) are the stack's own.
 */
import { ArnFormat, CfnOutput, Duration, type RemovalPolicy, type Stack, Validations } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import { Alarm, ComparisonOperator, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import type { TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import type { LogGroup } from "aws-cdk-lib/aws-logs";
import { type CfnSecret, Secret } from "aws-cdk-lib/aws-secretsmanager";
import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config.js";
import { LIST_INDEX } from "../shared/store/table.js";
import { grantBedrockModel } from "./bedrock-access.js";
import type { DurableRunner } from "./durable-runner.js";
import type { DeploySettings } from "./settings.js";
import type { BuiltInUserPool } from "./user-pool.js";

/** The duration alarm fires when p99 reaches this fraction of the function timeout. */
export const DURATION_ALARM_FRACTION = 0.9;

/**
 * The only DynamoDB actions the functions may perform on the one table's items: the ledger's and
 * quotes' conditional puts, gets and tenant queries, the run record's put/update/get, and the
 * idempotency records' owner-fenced update and delete (release of a 5xx outcome). The functions that
 * serve the API may also Query the listing index ({@link LIST_INDEX}: the approvals listings); nothing
 * else reads an index.
 */
export const TABLE_ITEM_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:Query",
] as const;

/**
 * The built-in pool's outputs: its id and client id (read by `npm run user`), and the commands to run
 * next, which `npm run deploy` prints last (local/deploy.ts).
 */
export function userPoolOutputs(stack: Stack, userPool: BuiltInUserPool, apiUrl: string): void {
  new CfnOutput(stack, "UserPoolId", { value: userPool.pool.userPoolId, description: "Cognito user pool" });
  new CfnOutput(stack, "UserPoolClientId", {
    value: userPool.client.userPoolClientId,
    description: "The pool's public app client (the API's audience)",
  });
  new CfnOutput(stack, "NextUserCommand", {
    value: "npm run user -- add --email you@example.com --tenant tenant_demo_01 --role writer",
    description: "Create your first user (prints a temporary password)",
  });
  new CfnOutput(stack, "SmokeCommand", {
    value: `BOUNDLOOP_TOKEN="$(npm run -s user -- token --email you@example.com)" npm run smoke -- --url ${apiUrl}`,
    description: "Send the seed scenario to the deployed API and check the result and the ledger",
  });
}

/**
 * The role of a function that serves the API's app (the API function, the streaming function): written
 * by hand (no AWS managed policy) so it holds exactly these actions, each on one resource (Bedrock's
 * bearer-key permission has none: infra/bedrock-access.ts) — its log group, the table's item actions,
 * Query on the listing index (the approvals listings), the OpenAI key's read or the Bedrock model, the
 * runner's start/stop, and PutEvents on the default bus (an MCP tools/call that needs approval is
 * announced as the runner announces the loop's, docs/mcp.md).
 */
export function appRole(
  stack: Stack,
  id: string,
  what: string,
  logs: LogGroup,
  access: {
    table: TableV2;
    secret: { secretArn: string } | undefined;
    bedrockModelId: string | undefined;
    runner: DurableRunner;
  },
): Role {
  const { table, secret, bedrockModelId, runner } = access;
  const role = new Role(stack, id, {
    assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
    description: `boundloop ${what}: its log group, item actions on the table, ${secret ? "read of the OpenAI key" : `invoking ${bedrockModelId} on Amazon Bedrock`}`,
  });
  logs.grantWrite(role);
  role.addToPolicy(new PolicyStatement({ actions: [...TABLE_ITEM_ACTIONS], resources: [table.tableArn] }));
  role.addToPolicy(
    new PolicyStatement({
      actions: ["dynamodb:Query"],
      resources: [`${table.tableArn}/index/${LIST_INDEX.name}`],
    }),
  );
  if (secret) {
    role.addToPolicy(
      new PolicyStatement({ actions: ["secretsmanager:GetSecretValue"], resources: [secret.secretArn] }),
    );
  }
  if (bedrockModelId) grantBedrockModel(role, bedrockModelId);
  runner.grantStartStop(role);
  role.addToPolicy(
    new PolicyStatement({
      actions: ["events:PutEvents"],
      resources: [stack.formatArn({ service: "events", resource: "event-bus", resourceName: "default" })],
    }),
  );
  return role;
}

/**
 * The OpenAI key's secret: an existing one referenced by name (`openaiApiKeySecretName`), or a new
 * secret created with no value at all (neither SecretString nor a generated one), so the key never
 * appears in the template; set it with `aws secretsmanager put-secret-value` after deploy.
 */
export function openaiKeySecret(
  stack: Stack,
  settings: DeploySettings,
  removalPolicy: RemovalPolicy,
): { secretArn: string; secretName: string } {
  if (settings.openaiApiKeySecretName !== undefined) {
    const name = settings.openaiApiKeySecretName;
    // A secret's ARN ends in "-" and 6 random characters that are unknown here; IAM's `?` matches
    // exactly one character, so the grant covers this secret's name and no other.
    const arn = stack.formatArn({
      service: "secretsmanager",
      resource: "secret",
      resourceName: `${name}-??????`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    return { secretArn: arn, secretName: name };
  }
  const secret = new Secret(stack, "OpenAiApiKey", {
    description: "OpenAI API key for boundloop (plain string). Set with put-secret-value; never in code.",
    removalPolicy,
  });
  // CDK's Secret generates a random value by default; an empty secret is the honest starting state
  // (GetSecretValue fails loudly until a real key is stored, instead of sending a random string).
  (secret.node.defaultChild as CfnSecret).addPropertyDeletionOverride("GenerateSecretString");
  Validations.of(secret).acknowledge({
    id: "AwsSolutions-SMG4",
    reason: "A third-party API key: Secrets Manager cannot rotate it; it is rotated by hand at the provider.",
  });
  return { secretArn: secret.secretArn, secretName: secret.secretName };
}

/** The settings every alarm shares: one 5-minute period, ≥ threshold, missing data not breaching. */
const ALARM_PERIOD = Duration.minutes(5);
const ALARM_COMMON = {
  evaluationPeriods: 1,
  comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  treatMissingData: TreatMissingData.NOT_BREACHING,
};

/**
 * A function's errors ≥ 1 (it threw or timed out) and throttles ≥ 1 alarms, ids `<idPrefix>ErrorsAlarm`
 * and `<idPrefix>ThrottlesAlarm`, described with `name` ("The API function …").
 */
function functionAlarms(stack: Stack, idPrefix: string, name: string, fn: LambdaFunction): void {
  new Alarm(stack, `${idPrefix}ErrorsAlarm`, {
    ...ALARM_COMMON,
    metric: fn.metricErrors({ period: ALARM_PERIOD, statistic: "Sum" }),
    threshold: 1,
    alarmDescription: `${name} threw or timed out at least once in 5 minutes.`,
  });
  new Alarm(stack, `${idPrefix}ThrottlesAlarm`, {
    ...ALARM_COMMON,
    metric: fn.metricThrottles({ period: ALARM_PERIOD, statistic: "Sum" }),
    threshold: 1,
    alarmDescription: `${name} was throttled at least once in 5 minutes.`,
  });
}

/**
 * CloudWatch alarms (no actions: attach an SNS topic to be notified). 5-minute periods, one
 * evaluation period, missing data is not breaching.
 * - errors ≥ 1 and throttles ≥ 1 of each function serving the API: the API function (ids
 *   `Function…Alarm`) and the streaming function (`StreamFunction…Alarm`), which serves the same runs
 * - the API function's duration p99 ≥ {@link DURATION_ALARM_FRACTION} of its timeout (ms). Not on the
 *   streaming function: an event stream stays open for STREAM_MAX_SECONDS (840 s of its 900 s by
 *   default) by design, so a long duration there is the normal case, not a symptom
 * - API 5xx ≥ 1 (gateway or integration failures, including function timeouts)
 * The durable runner's alarm is its own (infra/durable-runner.ts).
 */
export function alarms(stack: Stack, fn: LambdaFunction, streamFn: LambdaFunction, api: HttpApi): void {
  functionAlarms(stack, "Function", "The API function", fn);
  functionAlarms(stack, "StreamFunction", "The streaming function", streamFn);
  new Alarm(stack, "FunctionDurationP99Alarm", {
    ...ALARM_COMMON,
    metric: fn.metricDuration({ period: ALARM_PERIOD, statistic: "p99" }),
    threshold: Math.round(FUNCTION_TIMEOUT_SECONDS * 1000 * DURATION_ALARM_FRACTION),
    alarmDescription: `The API function's p99 duration reached ${DURATION_ALARM_FRACTION * 100}% of its ${FUNCTION_TIMEOUT_SECONDS} s timeout.`,
  });
  new Alarm(stack, "Api5xxAlarm", {
    ...ALARM_COMMON,
    metric: api.metricServerError({ period: ALARM_PERIOD, statistic: "Sum" }),
    threshold: 1,
    alarmDescription: "The HTTP API answered 5xx at least once in 5 minutes.",
  });
}
