import { buildApp } from "./build-app.js";

/**
 * The CDK app (`npx cdk synth`, via cdk.json): one stack, cdk-nag AwsSolutions checks, no context
 * lookups, so synth works offline without AWS credentials or Docker.
 */
buildApp().app.synth();
