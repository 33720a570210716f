/**
 * What ANSWER_GROUNDING does with an answer holding a number that no tool result or prompt gave
 * (shared/agent/grounding.ts). Its own module: shared/config.ts reads it at cold start without loading the
 * check itself.
 */
export const GROUNDING_MODES = ["report", "reask", "refuse"] as const;

/**
 * - `report` (default): the answer goes out as the model wrote it, its ungrounded numbers listed
 * - `reask`: the model is asked once more, with the tool results; its second answer goes out, checked
 *   and reported the same way
 * - `refuse`: the answer is withheld; the run ends `answer_ungrounded`
 */
export type GroundingMode = (typeof GROUNDING_MODES)[number];
