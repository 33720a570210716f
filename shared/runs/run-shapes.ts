import type { AnswerGrounding } from "../agent/grounding.js";
import type { HistoryMessage } from "../agent/history.js";
import type { ToolResult } from "../agent/result.js";
import type { RunStatus } from "../agent/types.js";

/**
 * The agent's types the run store persists (the store itself does not import the agent layer): run
 * statuses, tool results, the messages of stored transcripts, and the grounding check of answers.
 */
export type AgentRunShapes = {
  status: RunStatus;
  toolResult: ToolResult;
  message: HistoryMessage;
  grounding: AnswerGrounding;
};
