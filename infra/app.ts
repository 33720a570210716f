import { App } from "aws-cdk-lib";
import { BoundloopStack } from "./stack.js";

/** The CDK app (`npx cdk synth`): one stack, no context lookups, so synth works offline. */
const app = new App();
new BoundloopStack(app, "Boundloop");
app.synth();
