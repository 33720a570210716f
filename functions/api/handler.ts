import { handle } from "hono/aws-lambda";
import { loadConfig } from "../../shared/config.js";
import { type AppDeps, createDeps } from "../../shared/deps.js";
import { createApp } from "./app.js";

/**
 * Builds the Lambda handler over the given dependencies (or a factory for them, called on the first
 * request that needs them). Tests and local scripts use this with their own clients.
 */
export function createHandler(deps: AppDeps | (() => AppDeps)) {
  return handle(createApp(deps));
}

/** The event shapes the handler accepts (hono/aws-lambda's: API Gateway v1/v2, function URL, ALB). */
export type ApiEvent = Parameters<ReturnType<typeof createHandler>>[0];

/**
 * The Lambda entry point the stack deploys. It answers API Gateway HTTP API (v2) and REST API (v1)
 * events and Lambda function URL events (hono/aws-lambda decodes `isBase64Encoded` bodies). Config is
 * parsed at cold start (an invalid environment fails the init with a clear message); clients are built
 * on the first request that needs them, and the OpenAI key secret is read on the first model call.
 */
export const handler = createHandler(createDeps.bind(null, loadConfig(process.env)));
