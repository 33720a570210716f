/**
 * The AG-UI edge of the domain's refusals (shared/domain-errors.ts): anything that stops an AG-UI run
 * before or while it streams is one RUN_ERROR event whose `code` is the stable code (a DomainError's,
 * STORE_UNAVAILABLE, or INTERNAL for anything unexpected, whose text is never sent) and whose `message`
 * says why; `rawEvent` carries the facts a client may act on and `retryAfterSeconds` when the same input
 * may succeed later. docs/ag-ui.md, "Errors".
 */

import { DomainError } from "../domain-errors.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { AguiEvent } from "./event-type.js";

/** Seconds to wait before sending again when the store could not be reached. */
const STORE_RETRY_AFTER_SECONDS = 1;

/** What a RUN_ERROR's `rawEvent` holds: the code, the refusal's facts, and when to try again. */
export interface RunErrorDetail {
  code: string;
  facts: Record<string, unknown>;
  retryAfterSeconds: number | null;
}

/** The RUN_ERROR event of a thrown error (see the module comment), and whether it was unexpected. */
export function runErrorOf(error: unknown): { event: AguiEvent; unexpected: boolean } {
  if (error instanceof DomainError) {
    return {
      event: runError(error.message, {
        code: error.code,
        facts: { ...error.facts },
        retryAfterSeconds: error.retryAfterSeconds ?? null,
      }),
      unexpected: false,
    };
  }
  if (isStoreUnavailable(error)) {
    const detail = { code: "STORE_UNAVAILABLE", facts: {}, retryAfterSeconds: STORE_RETRY_AFTER_SECONDS };
    const message = `The data store is unavailable; send the same input again in ${STORE_RETRY_AFTER_SECONDS} s.`;
    return { event: runError(message, detail), unexpected: false };
  }
  const message = "The server failed during the run; send the same input again with Last-Event-ID.";
  return {
    event: runError(message, { code: "INTERNAL", facts: {}, retryAfterSeconds: null }),
    unexpected: true,
  };
}

/** A RUN_ERROR event. */
function runError(message: string, detail: RunErrorDetail): AguiEvent {
  return { type: "RUN_ERROR", message, code: detail.code, rawEvent: detail };
}
