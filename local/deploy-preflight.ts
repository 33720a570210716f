/**
 * What `npm run deploy` checks before `cdk deploy` synthesizes (which takes tens of seconds and then
 * fails with CDK's generic message): the AWS Region, the credentials, and that they work against the
 * account (CloudFormation DescribeStacks of the stack), each within a few seconds, each failure one line
 * with the fix. A Bedrock deploy gets the line saying which model to enable where (docs/deploy.md "Use
 * Bedrock"). Region and credentials are resolved the way the AWS SDK and CDK resolve them (environment,
 * AWS_PROFILE's config and credentials files, SSO, container and instance roles).
 */
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { DEFAULT_BEDROCK_MODEL_ID } from "../shared/config/model-provider.js";

/** The outcome of the checks: the lines to print, or the one line saying what is wrong and the fix. */
export type PreflightOutcome = { ok: true; lines: string[] } | { ok: false; problem: string };

/** What the checks need to know of the deploy: its stack, and the Bedrock model when it uses Bedrock. */
export interface PreflightOptions {
  stackName?: string;
  /** The Bedrock model the stack will call, or undefined for an OpenAI-compatible deploy. */
  bedrockModelId?: string;
  /** The bound on each AWS step (ms); the SDK's own retries run inside it. */
  timeoutMs?: number;
}

const AGAIN = "then npm run deploy again";

/** Rejects with `message` after `ms`, so no step waits on an unreachable endpoint for long. */
function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The one line for an error CloudFormation (or the credential chain) gave, by its AWS error name:
 * expired or unknown keys, a denied call, or an endpoint that could not be reached.
 */
export function describeAwsFailure(error: unknown, region: string): string {
  const name = (error as { name?: string }).name ?? "";
  const message = error instanceof Error ? error.message : String(error);
  if (/ExpiredToken|RequestExpired|TokenRefreshRequired/.test(name) || /expired/i.test(message)) {
    return `the AWS credentials have expired: renew them (aws sso login, or new keys), ${AGAIN}.`;
  }
  if (/InvalidClientTokenId|UnrecognizedClient|SignatureDoesNotMatch|InvalidAccessKeyId/.test(name)) {
    return `AWS does not know these credentials (${name}): check AWS_PROFILE or AWS_ACCESS_KEY_ID and its secret, ${AGAIN}.`;
  }
  if (/AccessDenied|NotAuthorized/.test(name)) {
    return `these credentials may not call CloudFormation in ${region} (${name}): deploy with a role that may (docs/deploy.md), ${AGAIN}.`;
  }
  return `cannot reach CloudFormation in ${region} (${message}): check the network and the Region, ${AGAIN}.`;
}

/**
 * Runs the checks in order: Region, credentials, one call to the account; stops at the first failure.
 * Each step is bounded by `timeoutMs` (default 5 s).
 */
export async function deployPreflight(options: PreflightOptions = {}): Promise<PreflightOutcome> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const stackName = options.stackName ?? "Boundloop";
  const client = new CloudFormationClient({ maxAttempts: 1 });
  try {
    let region: string;
    try {
      region = await client.config.region();
    } catch {
      return {
        ok: false,
        problem: `no AWS Region: export AWS_REGION=<region> (e.g. eu-west-2), or set one in your profile (aws configure set region <region>), ${AGAIN}.`,
      };
    }
    try {
      await within(client.config.credentials(), timeoutMs, "no credentials after the time allowed");
    } catch (error) {
      const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
      return {
        ok: false,
        problem: `no AWS credentials (${why}): export AWS_PROFILE=<profile> (after aws configure sso or aws configure), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ${AGAIN}.`,
      };
    }
    const stack = await within(
      client.send(new DescribeStacksCommand({ StackName: stackName })).then(
        () => "updates it",
        (error: unknown) => {
          // "Stack with id Boundloop does not exist" is CloudFormation answering: the credentials work.
          if ((error as { name?: string }).name === "ValidationError") return "creates it";
          throw error;
        },
      ),
      timeoutMs,
      "no answer after the time allowed",
    ).catch((error: unknown) => ({ failed: describeAwsFailure(error, region) }));
    if (typeof stack !== "string") return { ok: false, problem: stack.failed };
    const lines = [`deploy: AWS credentials work in ${region}; the deploy ${stack} (stack ${stackName}).`];
    if (options.bedrockModelId) {
      lines.push(
        `deploy: the functions will call ${options.bedrockModelId} on Amazon Bedrock in ${region}: enable it once in that Region's Bedrock console (docs/deploy.md#use-bedrock).`,
      );
    }
    return { ok: true, lines };
  } finally {
    client.destroy();
  }
}

/**
 * The `-c key=value` / `--context key=value` pairs and `--profile` of cdk's command line (cdk.json sets
 * neither a provider nor a profile, so these are what decide them).
 */
export function readCdkArgs(argv: string[]): { context: Record<string, string>; profile?: string } {
  const context: Record<string, string> = {};
  let profile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const inline = /^--context=(.*)$/.exec(arg)?.[1];
    const pair = inline ?? (arg === "-c" || arg === "--context" ? argv[++i] : undefined);
    if (pair?.includes("=")) {
      const at = pair.indexOf("=");
      context[pair.slice(0, at)] = pair.slice(at + 1);
    }
    if (arg === "--profile") profile = argv[++i];
    else if (arg.startsWith("--profile=")) profile = arg.slice("--profile=".length);
  }
  return { context, ...(profile ? { profile } : {}) };
}

/** The Bedrock model a deploy with these context values calls (infra/settings.ts), or undefined. */
export function bedrockModelOf(context: Record<string, string>): string | undefined {
  const provider = context.modelProvider ?? (context.personal === "true" ? "bedrock" : "openai-compatible");
  return provider === "bedrock" ? (context.bedrockModelId ?? DEFAULT_BEDROCK_MODEL_ID) : undefined;
}
