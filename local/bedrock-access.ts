/**
 * `npm run deploy`'s Bedrock check (local/deploy-preflight.ts): whether the account may call the model a
 * Bedrock deploy will call, in the deploy's Region, asked of Bedrock's control plane
 * (GetFoundationModelAvailability: Region availability, the account's authorization, entitlement and the
 * model's agreement) before cdk synthesizes. A model Bedrock does not serve there, or access not granted,
 * ends the deploy in one line with the fix; a check that cannot be made (no permission for the call, no
 * answer) is one line saying so, and the deploy goes on: the call is not one the deploy itself needs.
 */
import {
  BedrockClient,
  GetFoundationModelAvailabilityCommand,
  type GetFoundationModelAvailabilityCommandOutput,
} from "@aws-sdk/client-bedrock";

/** What the check found: a line to print and go on, or the one line saying what is wrong and the fix. */
export type ModelAccessOutcome = { ok: true; line: string } | { ok: false; problem: string };

/** Cross-Region inference profile ids (`eu.`, `us.`, `global.` …) name a model after a geography prefix. */
const PROFILE_PREFIX = /^(us|eu|apac|global|us-gov|jp|au|ca)\./;

const AGAIN = "then npm run deploy again";

/**
 * The foundation model an id names: the id itself, or a cross-Region inference profile's without its
 * geography prefix (`eu.amazon.nova-pro-v1:0` → `amazon.nova-pro-v1:0`).
 */
export function foundationModelOf(modelId: string): string {
  return modelId.replace(PROFILE_PREFIX, "");
}

/**
 * The one-line outcome for Bedrock's availability answer about `modelId` in `region`: not served there,
 * not authorized, not entitled, the agreement not accepted or still pending, or available.
 */
export function describeAvailability(
  answer: Pick<
    GetFoundationModelAvailabilityCommandOutput,
    "regionAvailability" | "authorizationStatus" | "entitlementAvailability" | "agreementAvailability"
  >,
  modelId: string,
  region: string,
): ModelAccessOutcome {
  const where = `in the Bedrock console's Model access page in ${region} (docs/deploy.md#use-bedrock)`;
  if (answer.regionAvailability === "NOT_AVAILABLE") {
    return {
      ok: false,
      problem: `Amazon Bedrock does not serve ${modelId} in ${region}: deploy to a Region that serves it (docs/deploy.md#use-bedrock), or choose another model with -c bedrockModelId=<id>, ${AGAIN}.`,
    };
  }
  if (answer.authorizationStatus === "NOT_AUTHORIZED") {
    return {
      ok: false,
      problem: `this account may not use ${modelId} on Amazon Bedrock in ${region} (not authorized): request access ${where}, or ask the account's administrator to allow it, ${AGAIN}.`,
    };
  }
  const agreement = answer.agreementAvailability?.status;
  if (agreement === "PENDING") {
    return {
      ok: false,
      problem: `access to ${modelId} on Amazon Bedrock in ${region} is still pending: wait for it ${where}, ${AGAIN}.`,
    };
  }
  if (
    answer.entitlementAvailability === "NOT_AVAILABLE" ||
    agreement === "NOT_AVAILABLE" ||
    agreement === "ERROR"
  ) {
    const why = answer.agreementAvailability?.errorMessage;
    return {
      ok: false,
      problem: `model access to ${modelId} is not enabled on Amazon Bedrock in ${region}${why ? ` (${why})` : ""}: enable it ${where}, ${AGAIN}.`,
    };
  }
  return {
    ok: true,
    line: `deploy: ${modelId} is available to this account on Amazon Bedrock in ${region}.`,
  };
}

/**
 * Asks Bedrock in `region` whether the account may call `modelId`, within `timeoutMs`.
 * @returns the outcome; a refused or failed check is `ok` with a line saying it could not be made, except
 *   a model id Bedrock does not know (ResourceNotFound/Validation), which ends the deploy
 */
export async function checkModelAccess(
  modelId: string,
  region: string,
  timeoutMs: number,
): Promise<ModelAccessOutcome> {
  const client = new BedrockClient({ region, maxAttempts: 1 });
  const abort = AbortSignal.timeout(timeoutMs);
  try {
    const answer = await client.send(
      new GetFoundationModelAvailabilityCommand({ modelId: foundationModelOf(modelId) }),
      { abortSignal: abort },
    );
    return describeAvailability(answer, modelId, region);
  } catch (error) {
    const name = (error as { name?: string }).name ?? "";
    if (/ResourceNotFound|Validation/.test(name)) {
      return {
        ok: false,
        problem: `Amazon Bedrock in ${region} knows no model ${modelId} (${name}): check -c bedrockModelId (docs/deploy.md#use-bedrock), ${AGAIN}.`,
      };
    }
    const why = abort.aborted ? "no answer in time" : name || String(error);
    return {
      ok: true,
      line: `deploy: could not check access to ${modelId} on Amazon Bedrock in ${region} (${why}): if runs answer MODEL_UNAVAILABLE, enable it in the Bedrock console's Model access page (docs/deploy.md#use-bedrock).`,
    };
  } finally {
    client.destroy();
  }
}
