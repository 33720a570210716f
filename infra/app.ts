import { buildApp } from "./build-app.js";
import { DeploySettingsError } from "./settings.js";

/**
 * The CDK app (`npx cdk synth`, via cdk.json): one stack, cdk-nag AwsSolutions checks, no context
 * lookups, so synth works offline without AWS credentials or Docker. Invalid deploy settings (e.g.
 * `-c maxCycles=51`) print one line per issue on stderr and exit 1: a user's mistake, not a bug, so no
 * stack trace buries the message. Any other error still crashes with its stack.
 */
try {
  buildApp().app.synth();
} catch (error) {
  if (!(error instanceof DeploySettingsError)) throw error;
  process.stderr.write(
    `boundloop: invalid deploy settings:\n${error.issues.map((issue) => `  ${issue}\n`).join("")}`,
  );
  process.exitCode = 1;
}
