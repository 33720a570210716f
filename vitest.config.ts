import { defineConfig } from "vitest/config";

/**
 * Files that assert how long something took on the wall clock (a deadline met within a margin, a run
 * answered before the Lambda timeout): they run after the rest, one file at a time, with the machine to
 * themselves, so another file's CPU load cannot make them late.
 */
const TIMED = [
  "test/console-live.test.ts",
  "test/http-errors.test.ts",
  "test/http-runs.test.ts",
  "test/loop-bounds.test.ts",
  "test/loop-peer-failures.test.ts",
  "test/model-wire-format.test.ts",
  "test/reliability/**/*.test.ts",
];

/**
 * Files that test no code the Lambda functions run: the local commands (`npm start`, `dev`, `invoke`,
 * `smoke`, `user`, `eval`, `deploy`'s checks and last lines), the documented commands, the console in a
 * browser, the stack's template as CDK synthesizes it on the developer's machine, and the repository's
 * own rules (layout, layers, source rules, docs). CI's second pass on the deployed runtime (Node.js 24,
 * `.ci/run`) sets BOUNDLOOP_TEST_SCOPE=deployed and leaves them out: they ran on the supported local Node
 * in the first pass, and they are most of the suite's time (each spawns processes or a browser).
 */
const NOT_DEPLOYED = [
  "test/local-*.test.ts",
  "test/docs.test.ts",
  "test/console.test.ts",
  "test/console-approvals.test.ts",
  "test/console-live.test.ts",
  "test/console-oidc.test.ts",
  "test/user-command.test.ts",
  "test/smoke.test.ts",
  "test/evals-cli.test.ts",
  "test/deploy-preflight.test.ts",
  "test/next-steps.test.ts",
  "test/mcp-inspector-command.test.ts",
  "test/install-warnings.test.ts",
  "test/infra.test.ts",
  "test/infra-bedrock.test.ts",
  "test/infra-console.test.ts",
  "test/infra-user-pool.test.ts",
  "test/readme-layout.test.ts",
  "test/source-rules.test.ts",
  "test/layers.test.ts",
  "test/policies-docs.test.ts",
];
const SKIPPED = process.env.BOUNDLOOP_TEST_SCOPE === "deployed" ? NOT_DEPLOYED : [];

export default defineConfig({
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    // BOUNDLOOP_CLASS_DATA=use: the suite's DynamoDB Local and the scripts it runs use a class-data archive
    // that exists and never write one (test/local-class-data.test.ts writes its own in a directory of its own).
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", BOUNDLOOP_CLASS_DATA: "use" },
    projects: [
      {
        extends: true,
        // Most files wait on I/O (DynamoDB Local, child processes, a browser): two at a time on 2 cores.
        test: {
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: [...TIMED, ...SKIPPED],
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: { name: "timed", include: TIMED, exclude: SKIPPED, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
