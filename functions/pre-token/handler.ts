/**
 * The built-in user pool's pre token generation trigger (event version V2_0, infra/user-pool.ts): shapes
 * every access token Cognito issues so the API's handler reads exactly what it needs
 * (shared/user-roles.ts BUILT_IN_POOL_IDENTITY):
 * - `tenant_id`: the user's `custom:tenant_id` attribute, which only an administrator can set;
 * - `scope`: Cognito's own scopes plus the permissions of the user's role groups
 *   (`billing:read`, `billing:write`, `billing:approve`); any other `billing:` scope a request asked
 *   for is suppressed, so the groups are the only source of permissions.
 * A user without a valid tenant gets no token at all: the trigger throws, and Cognito fails the sign-in
 * with "PreTokenGeneration failed with error …" (the message below).
 *
 * Event and response shapes:
 * https://docs.aws.amazon.com/cognito/latest/developerguide/user-pool-lambda-pre-token-generation.html
 */
import type { PreTokenGenerationV2TriggerEvent } from "aws-lambda";
import {
  ALL_PERMISSIONS,
  permissionsOfGroups,
  TENANT_CLAIM,
  TENANT_ID_PATTERN,
  TENANT_USER_ATTRIBUTE,
} from "../../shared/user-roles.js";

/** Thrown (and shown by Cognito at sign-in) when the user has no usable tenant attribute. */
export class NoTenantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Fills `event.response.claimsAndScopeOverrideDetails` for the access token (the ID token is left as
 * Cognito makes it) and returns the event, as Cognito expects.
 * @throws NoTenantError when `custom:tenant_id` is missing or not 1-64 characters of A-Z a-z 0-9 _ -
 */
export function shapeTokens(event: PreTokenGenerationV2TriggerEvent): PreTokenGenerationV2TriggerEvent {
  const tenant = event.request.userAttributes[TENANT_USER_ATTRIBUTE]?.trim();
  if (!tenant || !TENANT_ID_PATTERN.test(tenant)) {
    throw new NoTenantError(
      `user ${event.userName} has no valid ${TENANT_USER_ATTRIBUTE}; an administrator sets it (npm run user -- add).`,
    );
  }
  const permissions = permissionsOfGroups(event.request.groupConfiguration.groupsToOverride ?? []);
  const requested = event.request.scopes ?? [];
  const suppressed = requested.filter(
    (scope) =>
      (scope.startsWith("billing:") || ALL_PERMISSIONS.includes(scope)) && !permissions.includes(scope),
  );
  event.response = {
    claimsAndScopeOverrideDetails: {
      accessTokenGeneration: {
        claimsToAddOrOverride: { [TENANT_CLAIM]: tenant },
        scopesToAdd: permissions,
        ...(suppressed.length > 0 ? { scopesToSuppress: suppressed } : {}),
      },
    },
  };
  return event;
}

/** The Lambda entry point Cognito invokes synchronously. */
export async function handler(
  event: PreTokenGenerationV2TriggerEvent,
): Promise<PreTokenGenerationV2TriggerEvent> {
  return shapeTokens(event);
}
