import { ArnFormat, Stack, Validations } from "aws-cdk-lib";
import { type IGrantable, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IConstruct } from "constructs";

/**
 * The one model-invocation action Bedrock's Chat Completions endpoint needs for a non-streaming request
 * (the function never streams; a streaming one would need bedrock:InvokeModelWithResponseStream).
 */
export const BEDROCK_INVOKE_ACTIONS = ["bedrock:InvokeModel"] as const;

/** The action that lets a principal use a Bedrock API key (short- or long-term) it signed. */
export const BEDROCK_BEARER_ACTION = "bedrock:CallWithBearerToken";

/** Geography prefixes of Bedrock's system-defined (cross-Region) inference profile ids. */
const PROFILE_PREFIX = /^(us|eu|apac|jp|au|ca|us-gov|global)\./;

/**
 * The ARNs a role needs to invoke `modelId` in the stack's Region: the foundation model
 * (`arn:<partition>:bedrock:<region>::foundation-model/<id>`), or for an inference profile id the profile
 * (`…:<region>:<account>:inference-profile/<id>`) and its foundation model in the stack's Region.
 * A cross-Region profile may route to other Regions as well; those need their own grant (docs/deploy.md).
 */
export function bedrockModelArns(scope: IConstruct, modelId: string): string[] {
  const stack = Stack.of(scope);
  const foundationModel = (id: string) =>
    stack.formatArn({
      service: "bedrock",
      account: "",
      resource: "foundation-model",
      resourceName: id,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
  const profile = PROFILE_PREFIX.exec(modelId);
  if (!profile) return [foundationModel(modelId)];
  return [
    stack.formatArn({
      service: "bedrock",
      resource: "inference-profile",
      resourceName: modelId,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    }),
    foundationModel(modelId.slice(profile[0].length)),
  ];
}

/**
 * Lets `grantee` call Bedrock's Chat Completions endpoint for `modelId` with short-term API keys it makes
 * from its own credentials, and nothing else on Bedrock:
 * - bedrock:InvokeModel on {@link bedrockModelArns} only;
 * - bedrock:CallWithBearerToken with `bedrock:bearerTokenType` = SHORT_TERM (no long-term keys). IAM
 *   defines no resource type for this action (the Service Authorization Reference lists none), so its
 *   only valid Resource is "*": a statement naming an ARN would never match and every call would be
 *   refused. The condition is what scopes it; the cdk-nag finding on that "*" is acknowledged on this
 *   grantee, for this one resource, with that reason.
 */
export function grantBedrockModel(grantee: IGrantable & IConstruct, modelId: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: [...BEDROCK_INVOKE_ACTIONS],
      resources: bedrockModelArns(grantee, modelId),
    }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: [BEDROCK_BEARER_ACTION],
      resources: ["*"],
      conditions: { StringEquals: { "bedrock:bearerTokenType": "SHORT_TERM" } },
    }),
  );
  Validations.of(grantee).acknowledge({
    id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
    reason:
      "bedrock:CallWithBearerToken has no resource type in IAM, so its Resource can only be *; it is limited to short-term keys (bedrock:bearerTokenType SHORT_TERM), and model invocation is granted on the configured model's ARNs only.",
  });
}
