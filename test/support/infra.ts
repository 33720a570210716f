/**
 * The CDK stack's template helpers shared by test/infra.test.ts, infra-stack.test.ts and
 * infra-settings.test.ts: synthesis without bundling, and readers of its resources.
 */
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { expect } from "vitest";
import { BoundloopStack, type BoundloopStackProps } from "../../infra/stack.js";

/**
 * Template assertions on the stack. Bundling is skipped here (`aws:cdk:bundling-stacks: []`) to keep
 * the file fast; test/infra-synth.test.ts synthesizes the real app with the bundle and cdk-nag.
 */
export function synth(context: Record<string, unknown> = {}, props: BoundloopStackProps = {}) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const stack = new BoundloopStack(app, "Test", props);
  return { stack, template: Template.fromStack(stack) };
}

export type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

export const COGNITO_ISSUER = "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123";

/** The one resource of a type whose logical id starts with `prefix` (ApiFunction…, Runner…). */
export function named(all: Record<string, Resource>, type: string, prefix: string): Resource {
  const found = Object.entries(all).filter(
    ([id, resource]) => resource.Type === type && id.startsWith(prefix),
  );
  expect(found, `${type} ${prefix}`).toHaveLength(1);
  return (found[0] as [string, Resource])[1];
}

/** The API function (the durable runner is the stack's other function). */
export const apiFunction = (all: Record<string, Resource>) =>
  named(all, "AWS::Lambda::Function", "ApiFunction");

/** The API function's environment variables. */
export const envOf = (all: Record<string, Resource>) =>
  (apiFunction(all).Properties.Environment as { Variables: Record<string, unknown> }).Variables;

/** The logical id of the API function's log group. */
export const functionLogGroupId = (all: Record<string, Resource>) =>
  (apiFunction(all).Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;

/** The statements of the policy attached to the role whose logical id starts with `rolePrefix`. */
export const statementsOf = (all: Record<string, Resource>, rolePrefix: string) =>
  Object.entries(all)
    .filter(([id, resource]) => resource.Type === "AWS::IAM::Policy" && id.startsWith(rolePrefix))
    .flatMap(
      ([, policy]) =>
        (policy.Properties.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
    );

/** The durable runner's environment variables. */
export const runnerEnvOf = (all: Record<string, Resource>) =>
  (
    named(all, "AWS::Lambda::Function", "RunnerFunction").Properties.Environment as {
      Variables: Record<string, unknown>;
    }
  ).Variables;

/** The plain-string variables of a function's environment (the stack's tokens, table and ARNs, left out). */
export const plainEnv = (env: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );

/** The environments of the functions that run the app (every function with the table's name). */
export function appFunctionsEnv(context: Record<string, unknown>): Array<Record<string, unknown>> {
  const all = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", ...context }).template.toJSON()
    .Resources as Record<string, Resource>;
  return Object.values(all)
    .filter((resource) => resource.Type === "AWS::Lambda::Function")
    .map(
      (fn) => (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables,
    )
    .filter((env): env is Record<string, unknown> => env?.TABLE_NAME !== undefined);
}

/** The shared-account deployment every file starts from: a real (Cognito) issuer and two audiences. */
export function sharedDeployment() {
  const { stack, template } = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "client-a, client-b" });
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const ofType = (type: string) => Object.values(resources).filter((resource) => resource.Type === type);
  return { stack, template, resources, ofType };
}
