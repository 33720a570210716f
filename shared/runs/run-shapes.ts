import type { AnswerGrounding } from "../agent/grounding.js";
import type { ToolResult } from "../agent/result.js";
import type { HistoryMessage } from "../agent/transcript.js";
import type { RunStatus } from "../agent/types.js";
import type { RunRecord, RunStep } from "../store/runs.js";

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

/** A run record of the agent's runs. */
export type AgentRunRecord = RunRecord<AgentRunShapes>;

/** An audit step of the agent's runs. */
export type AgentRunStep = RunStep<AgentRunShapes>;
