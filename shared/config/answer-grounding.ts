/**
 * Configuration section: grounded answers (docs/evals.md, "Grounding").
 * - ANSWER_GROUNDING (default report): what an answer holding a number (an amount, a rate, a count) that no
 *   tool result and no prompt of the run gave does. report: the answer goes out with its ungrounded
 *   numbers listed; reask: the model is asked once more with the tool results; refuse: the answer is
 *   withheld and the run ends `answer_ungrounded`. Report is the default: it changes no answer a client
 *   gets today and makes every ungrounded number visible.
 */
import * as z from "zod/mini";
import { GROUNDING_MODES, type GroundingMode } from "../agent/grounding-mode.js";
import { configSection, type SectionDocs } from "./section.js";

/** The grounded answers section's variables, see the module comment. */
export const answerGroundingFields = {
  ANSWER_GROUNDING: z._default(z.enum(GROUNDING_MODES), "report"),
};

/** The grounded answers section: `grounding.mode`, what an ungrounded number in an answer does. */
export const answerGroundingSection = configSection({
  fields: answerGroundingFields,
  config: (env): { grounding: { mode: GroundingMode } } => ({ grounding: { mode: env.ANSWER_GROUNDING } }),
});

/** The prose of the grounded answers section's variables (docs/configuration.md). */
export const answerGroundingDocs: SectionDocs<typeof answerGroundingFields> = {
  ANSWER_GROUNDING: {
    group: "Grounded answers",
    description:
      "What an answer holding a number (an amount, a rate, a count) that no tool result and no prompt of the run gave does (docs/evals.md, Grounding). `report`: the answer goes out, its ungrounded numbers listed in the outcome's `grounding`, the `answer.ungrounded` event and, with `TRACE_CONTENT=true`, the run's span (without it the span has their count). `reask`: the model is asked once more with the tool results, and its second answer goes out, checked the same way. `refuse`: the answer is withheld and the run ends `answer_ungrounded`. Deploy setting `answerGrounding`.",
  },
};
