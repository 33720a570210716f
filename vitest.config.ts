import { defineConfig } from "vitest/config";

/**
 * Files that assert how long something took on the wall clock (a deadline met within a margin, a run
 * answered before the Lambda timeout): they run after the rest, one file at a time, with the machine to
 * themselves, so another file's CPU load cannot make them late.
 */
const TIMED = [
  "test/console-live.test.ts",
  "test/durable-deadline.test.ts",
  "test/http-errors.test.ts",
  "test/http-runs.test.ts",
  "test/loop-bounds.test.ts",
  "test/loop-peer-failures.test.ts",
  "test/model-wire-format.test.ts",
  "test/reliability/**/*.test.ts",
];

export default defineConfig({
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    projects: [
      {
        extends: true,
        // Most files wait on I/O (DynamoDB Local, child processes, a browser): two at a time on 2 cores.
        test: { name: "suite", include: ["test/**/*.test.ts"], exclude: TIMED, maxWorkers: 2 },
      },
      {
        extends: true,
        test: { name: "timed", include: TIMED, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
