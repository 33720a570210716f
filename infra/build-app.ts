import { App, type AppProps, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { BoundloopStack, type BoundloopStackProps } from "./stack.js";

/** The stack's construct id (and default CloudFormation stack name). */
export const STACK_ID = "Boundloop";

/**
 * Builds the CDK app: one {@link BoundloopStack} with cdk-nag's AwsSolutions pack registered as a
 * policy-validation plugin (cdk-nag 3.x), so every synth fails on an unacknowledged finding.
 * `infra/app.ts` (the cdk.json app) and the tests share this.
 * @param appProps e.g. `{ context: { jwtIssuer: "https://..." }, outdir }`
 * @param stackProps stack props; `settings` override the context values
 */
export function buildApp(appProps: AppProps = {}, stackProps: BoundloopStackProps = {}) {
  const app = new App(appProps);
  const stack = new BoundloopStack(app, STACK_ID, {
    description: "boundloop: bounded agent loop on Lambda + DynamoDB behind an HTTP API",
    ...stackProps,
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
