/** What every part of the A2A adapter knows of the request it serves (its own module: no import cycle). */
import type { AgentCard } from "@a2a-js/sdk";
import type { ApiDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";

/** How long a stream may last: `endsAt`, epoch ms of the API's clock. */
export interface StreamOptions {
  endsAt: number;
}

/**
 * What one request's handler knows: the API's dependencies, the verified caller, the card, the Lambda's
 * remaining time (ms, when on Lambda) and how long a stream may last.
 */
export interface A2ACall {
  deps: ApiDeps;
  security: SecurityContext;
  card: AgentCard;
  lambdaRemainingMs?: number | undefined;
  stream: StreamOptions;
}
