import { defineConfig } from "vitest/config";

/**
 * Files that assert how long something took on the wall clock (a deadline met within a margin, a run
 * answered before the Lambda timeout): they run after the rest, one file at a time, with the machine to
 * themselves, so another file's CPU load cannot make them late.
 */
const TIMED = [
  "test/http-errors.test.ts",
  "test/http-runs.test.ts",
  "test/loop-bounds.test.ts",
  "test/loop-peer-failures-model-output.test.ts",
  "test/loop-peer-failures-timing.test.ts",
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
  "test/docs-commands.test.ts",
  "test/docs-config-reference.test.ts",
  "test/console.test.ts",
  "test/console-approvals.test.ts",
  "test/console-live.test.ts",
  "test/console-oidc.test.ts",
  "test/console-first-use.test.ts",
  "test/user-command.test.ts",
  "test/tenant-limits.test.ts",
  "test/tenant-limits-dev.test.ts",
  "test/smoke.test.ts",
  "test/model-server-latency.test.ts",
  "test/evals-cli.test.ts",
  "test/deploy-preflight.test.ts",
  "test/next-steps.test.ts",
  "test/mcp-inspector-command.test.ts",
  "test/install-warnings.test.ts",
  "test/infra.test.ts",
  "test/infra-stack.test.ts",
  "test/infra-settings.test.ts",
  "test/infra-bedrock.test.ts",
  "test/infra-console.test.ts",
  "test/infra-user-pool.test.ts",
  "test/readme-layout.test.ts",
  "test/source-rules.test.ts",
  "test/layers.test.ts",
  "test/policies-docs.test.ts",
];
const SKIPPED = process.env.BOUNDLOOP_TEST_SCOPE === "deployed" ? NOT_DEPLOYED : [];

/**
 * Files that run without isolation (`isolate: false`): a worker runs several of them in turn and loads
 * the modules they share once (the app, hono, the AWS SDK, zod schemas, cedar-wasm, the console's built
 * assets) instead of once per file, which was most of the suite's CPU time. A file belongs here only when
 * it leaves no process-wide state behind for the next file: it writes no process.env, mocks, spies or
 * stubs nothing, fakes no timers, registers no global tracer provider (the tracing files), and builds its
 * stacks, servers and clocks itself. Any other file (a new one too) runs isolated in the suite project.
 * A file here that is also {@link TIMED} runs with the timed files, in their one worker (see TIMED_SHARED).
 */
const SHARED_MODULES = [
  "test/a2a-sdk-plugin.test.ts",
  "test/a2a-spec.test.ts",
  "test/a2a-states.test.ts",
  "test/a2a.test.ts",
  "test/agent-boundary.test.ts",
  "test/agui.test.ts",
  "test/approval-events.test.ts",
  "test/approvals-config.test.ts",
  "test/approvals-decided.test.ts",
  "test/approvals-decisions.test.ts",
  "test/approvals-expiry.test.ts",
  "test/approvals-handoff.test.ts",
  "test/approvals-list.test.ts",
  "test/approvals-seams.test.ts",
  "test/approvals.test.ts",
  "test/aws-sdk-unused-plugin.test.ts",
  "test/bench-floor.test.ts",
  "test/cedar-wasm.test.ts",
  "test/config-endpoints.test.ts",
  "test/config-numbers.test.ts",
  "test/config-sections.test.ts",
  "test/console-serving.test.ts",
  "test/conversation-history.test.ts",
  "test/conversation-invoices.test.ts",
  "test/conversation.test.ts",
  "test/counters-store.test.ts",
  "test/deadline.test.ts",
  "test/dispatcher-errors.test.ts",
  "test/dispatcher.test.ts",
  "test/docs-commands.test.ts",
  "test/docs-config-reference.test.ts",
  "test/docs-quotas.test.ts",
  "test/docs.test.ts",
  "test/durable-conversation.test.ts",
  "test/durable-deadline.test.ts",
  "test/durable-runs.test.ts",
  "test/evals-governance.test.ts",
  "test/evals.test.ts",
  "test/governance-requests.test.ts",
  "test/handler-entry.test.ts",
  "test/history.test.ts",
  "test/http-config.test.ts",
  "test/http-edge.test.ts",
  "test/http-errors.test.ts",
  "test/http-invoices.test.ts",
  "test/http-method-not-allowed.test.ts",
  "test/http-query-params.test.ts",
  "test/http-runs-filters.test.ts",
  "test/http-runs-list.test.ts",
  "test/http-runs.test.ts",
  "test/idempotency-callers.test.ts",
  "test/idempotency-crash.test.ts",
  "test/idempotency-http-logic.test.ts",
  "test/idempotency-http.test.ts",
  "test/idempotency-key-syntax.test.ts",
  "test/idempotency-store.test.ts",
  "test/identity.test.ts",
  "test/infra-bedrock.test.ts",
  "test/infra-console.test.ts",
  "test/infra-settings.test.ts",
  "test/infra-stack.test.ts",
  "test/infra-synth-tracing.test.ts",
  "test/infra-synth.test.ts",
  "test/infra-user-pool.test.ts",
  "test/infra.test.ts",
  "test/install-warnings.test.ts",
  "test/lambda-executions.test.ts",
  "test/layers.test.ts",
  "test/local-dev-event.test.ts",
  "test/local-env.test.ts",
  "test/local-invoke-cold-start.test.ts",
  "test/loop-bounds.test.ts",
  "test/loop-limits.test.ts",
  "test/loop-peer-failures-model-output.test.ts",
  "test/loop-peer-failures-timing.test.ts",
  "test/loop-peer-failures.test.ts",
  "test/loop-steps.test.ts",
  "test/loop.test.ts",
  "test/mcp-approval.test.ts",
  "test/mcp-guards.test.ts",
  "test/mcp-identity.test.ts",
  "test/mcp-inspector-command.test.ts",
  "test/mcp.test.ts",
  "test/model-endpoint-failure.test.ts",
  "test/model-server-latency.test.ts",
  "test/model-server-tool-choice.test.ts",
  "test/model-turn-estimate.test.ts",
  "test/model-wire-format.test.ts",
  "test/money-property.test.ts",
  "test/money.test.ts",
  "test/next-steps.test.ts",
  "test/occurrence-identity.test.ts",
  "test/openapi-edge-responses.test.ts",
  "test/openapi-prism.test.ts",
  "test/openapi.test.ts",
  "test/planner-reads.test.ts",
  "test/policies-api.test.ts",
  "test/policies-docs.test.ts",
  "test/policies-durable.test.ts",
  "test/policies-engine.test.ts",
  "test/policies-known.test.ts",
  "test/policies-replay-midnight.test.ts",
  "test/policies-totals-boundary.test.ts",
  "test/policies.test.ts",
  "test/pre-token-trigger.test.ts",
  "test/protocol-errors.test.ts",
  "test/protocol-refusals.test.ts",
  "test/protocols-bundle.test.ts",
  "test/quota-cost-limits.test.ts",
  "test/quota-prices.test.ts",
  "test/quotas-admission.test.ts",
  "test/quotas-budget.test.ts",
  "test/quotas-cancel-midnight.test.ts",
  "test/quotas-cancel.test.ts",
  "test/quotas-day-boundary.test.ts",
  "test/quotas-durable.test.ts",
  "test/quotas-holds.test.ts",
  "test/quotas-retried-start-midnight.test.ts",
  "test/quote.test.ts",
  "test/readme-layout.test.ts",
  "test/record-invoice.test.ts",
  "test/require-banner-plugin.test.ts",
  "test/run-abandoned.test.ts",
  "test/run-events-durable.test.ts",
  "test/run-events-feed.test.ts",
  "test/run-events-post.test.ts",
  "test/run-events-requests.test.ts",
  "test/run-events-results.test.ts",
  "test/run-events-resume.test.ts",
  "test/run-events.test.ts",
  "test/runs-store.test.ts",
  "test/runs-transcript.test.ts",
  "test/seed-scenario.test.ts",
  "test/source-rules.test.ts",
  "test/store-boundaries.test.ts",
  "test/store-bounds.test.ts",
  "test/stream-cors.test.ts",
  "test/stream-entry-unreadable.test.ts",
  "test/strict-schema.test.ts",
  "test/system-prompt.test.ts",
  "test/tax-rules.test.ts",
  "test/tax-tool.test.ts",
  "test/telemetry-ids.test.ts",
  "test/tenant-limits-deployed.test.ts",
  "test/tools-offered.test.ts",
  "test/tools-read.test.ts",
];

/**
 * The {@link TIMED} files that are also {@link SHARED_MODULES}: one worker runs them one after another
 * without isolation, loading the app's modules once instead of once per file (a fresh worker and its
 * imports cost about a second a file); the machine is still theirs alone, one file at a time.
 */
const TIMED_SHARED = TIMED.filter((file) => SHARED_MODULES.includes(file));

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
        // The shared-module files first, as one group, so each worker goes from one to the next.
        test: {
          name: "shared",
          include: SHARED_MODULES,
          exclude: [...TIMED, ...SKIPPED],
          isolate: false,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: [...TIMED, ...SHARED_MODULES, ...SKIPPED],
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        // One worker receives every file at once (isolate: false, maxWorkers: 1) and runs them in turn.
        test: {
          name: "timed-shared",
          include: TIMED_SHARED,
          exclude: SKIPPED,
          isolate: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: "timed",
          include: TIMED,
          exclude: [...TIMED_SHARED, ...SKIPPED],
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
