/**
 * Configuration section: the DynamoDB table and its client.
 * - DYNAMODB_REQUEST_TIMEOUT_MS (default 3000 ms): per-attempt socket timeout of DynamoDB calls, so an
 *   unreachable table answers 503 STORE_UNAVAILABLE instead of hanging until the Lambda times out.
 */
import * as z from "zod/mini";
import { optionalUrl, positiveInt } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The DynamoDB section's variables, see the module comment. */
export const dynamodbFields = {
  // DynamoDB's naming rule: any other name fails every request (ValidationException, 500 INTERNAL).
  TABLE_NAME: z._default(
    z
      .string()
      .check(
        z.regex(/^[A-Za-z0-9_.-]{3,255}$/, "must be a DynamoDB table name: 3 to 255 of A-Z a-z 0-9 _ . -"),
      ),
    "boundloop",
  ),
  DYNAMODB_ENDPOINT: optionalUrl,
  AWS_REGION: z._default(z.string().check(z.minLength(1)), "us-east-1"),
  DYNAMODB_REQUEST_TIMEOUT_MS: positiveInt(3_000, 60_000),
};

/** The DynamoDB section: `table`, the table name and optional endpoint override (DynamoDB Local, dynalite). */
export const dynamodbSection = configSection({
  fields: dynamodbFields,
  config: (
    env,
  ): { table: { name: string; endpoint: string | undefined; region: string; requestTimeoutMs: number } } => ({
    table: {
      name: env.TABLE_NAME,
      endpoint: env.DYNAMODB_ENDPOINT,
      region: env.AWS_REGION,
      requestTimeoutMs: env.DYNAMODB_REQUEST_TIMEOUT_MS,
    },
  }),
});

/** The prose of the DynamoDB section's variables (docs/configuration.md). */
export const dynamodbDocs: SectionDocs<typeof dynamodbFields> = {
  TABLE_NAME: {
    group: "DynamoDB",
    description: "DynamoDB table (local runs create it when missing; on AWS the stack owns it).",
  },
  DYNAMODB_ENDPOINT: {
    group: "DynamoDB",
    description:
      "An existing DynamoDB (Local) endpoint; local runs then start none. Unset on AWS (the regional endpoint).",
  },
  AWS_REGION: { group: "DynamoDB", description: "Region of the DynamoDB client (set by Lambda on AWS)." },
  DYNAMODB_REQUEST_TIMEOUT_MS: {
    group: "DynamoDB",
    unit: "ms",
    description:
      "Per-attempt socket timeout of a DynamoDB request. Past it, after the SDK's 3 attempts, the API answers 503 `STORE_UNAVAILABLE` instead of hanging until the Lambda times out.",
  },
};
