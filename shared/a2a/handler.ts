/**
 * boundloop's A2A request handler (`A2ARequestHandler` of `@a2a-js/sdk/server`, served through the
 * SDK's `JsonRpcTransportHandler` by serve.ts): every method maps A2A onto the one application layer
 * and nothing else — the services of every surface (`readRun`, `listRuns`, `cancelRun`, with the access
 * rules of shared/runs/access.ts) and the turns of the protocol port (shared/runs/protocol-port.ts) —
 * for the caller the verified token names (never the request's `tenant` field). A task is a run;
 * SendMessage starts a turn keyed by the message id; the context is the conversation. Domain refusals
 * become A2A errors in errors.ts only. docs/a2a.md.
 */
import type {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import { TaskState } from "@a2a-js/sdk";
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server";
import { DomainError, isDomainError } from "../domain-errors.js";
import { cancelRun } from "../runs/cancel.js";
import { LAST_EVENT_ID_RULE, lastEventSequence } from "../runs/event-feed.js";
import { isUsableKey, MAX_KEY_LENGTH } from "../runs/exactly-once.js";
import { listRuns, readRun } from "../runs/queries.js";
import { PROMPT_MAX_CHARS, RUN_ID_PATTERN } from "../runs/run-request.js";
import type { A2ACall } from "./call.js";
import { toA2AError } from "./errors.js";
import { TASK_STATES } from "./states.js";
import { streamTask } from "./stream.js";
import { taskOf } from "./tasks.js";
import { isEnded, startTurn, type TurnInput } from "./turn.js";

/** Page size of ListTasks when the client names none, and the most one page holds. */
export const LIST_TASKS_DEFAULT = 50;
const LIST_TASKS_MAX = 100;

/**
 * Builds the handler of one request. Refusals become A2A errors by `toA2AError` (errors.ts): the domain's
 * stable `code` is in the error's metadata, never an internal error's text (which is logged).
 */
export function createA2AHandler(call: A2ACall): A2ARequestHandler {
  const { deps, security } = call;
  const guarded =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (error) {
        throw mapped(call, error);
      }
    };
  const noPush = async (): Promise<never> => {
    throw new PushNotificationNotSupportedError("This agent sends no push notifications.");
  };
  return {
    getAgentCard: async () => call.card,
    // The card declares `capabilities.extendedAgentCard: false` (an authenticated caller learns nothing
    // more), and A2A 1.0 §3.3.4 says that answer is UnsupportedOperationError, never the public card.
    getAuthenticatedExtendedAgentCard: async () => {
      throw new UnsupportedOperationError("This agent has no extended Agent Card: read the public one.");
    },
    sendMessage: guarded(async (params: SendMessageRequest, _context: ServerCallContext) =>
      withHistoryLength(
        await sendMessage(call, turnInputOf(params, false)),
        params.configuration?.historyLength,
      ),
    ),
    sendMessageStream: (params: SendMessageRequest) => guardedStream(call, turnInputOf(params, false)),
    getTask: guarded(async (params: GetTaskRequest) =>
      withHistoryLength(taskOf(await readRun(deps, security, taskIdOf(params.id))), params.historyLength),
    ),
    cancelTask: guarded(async (params: CancelTaskRequest) =>
      taskOf(await cancelRun(deps, security, taskIdOf(params.id))),
    ),
    resubscribe: (params: SubscribeToTaskRequest, context: ServerCallContext) =>
      resubscribe(call, params.id, lastEventIdOf(context)),
    listTasks: guarded((params: ListTasksRequest) => listTasks(call, params)),
    createTaskPushNotificationConfig: noPush as (p: TaskPushNotificationConfig) => Promise<never>,
    getTaskPushNotificationConfig: noPush,
    listTaskPushNotificationConfigs: noPush,
    deleteTaskPushNotificationConfig: noPush,
  };
}

/**
 * SendMessage: starts the turn and answers its task: a blocking send (the default) waits for this
 * request's part of the run (its end, or its hand-over to a durable run at an approval); a send with
 * `returnImmediately` starts a durable run where there are durable executions and answers `working`.
 * @throws DomainError IDEMPOTENCY_KEY_IN_USE (retryAfterSeconds) when a concurrent send of the same
 *   message id holds the key and its run has no record yet; the turn's refusals
 */
async function sendMessage(call: A2ACall, input: TurnInput): Promise<Task> {
  const turn = await startTurn(call, input);
  const outcome = await turn.settled;
  turn.live?.close();
  if (outcome.error) throw outcome.error;
  const busy = outcome.start?.kind === "existing" ? outcome.start.retryAfterSeconds : undefined;
  try {
    return taskOf(await readRun(call.deps, call.security, turn.runId));
  } catch (error) {
    // A retry racing the first send of this message id: that request holds the key and has not written
    // its run yet. The task exists in a moment, so "retry", not "no such task".
    if (busy === undefined || !(error instanceof DomainError) || error.code !== "NOT_FOUND") throw error;
    throw new DomainError(
      "IDEMPOTENCY_KEY_IN_USE",
      "A request with this message id is still starting its task; send it again shortly.",
      { facts: { runId: turn.runId }, retryAfterSeconds: busy },
    );
  }
}

/** A thrown error as the A2A error the client gets; an unexpected one is logged first. */
function mapped(call: A2ACall, error: unknown): Error {
  const a2a = toA2AError(error);
  if (!isDomainError(error) && a2a !== error) {
    call.deps.logger.error("A2A request failed", { error: error as Error });
  }
  return a2a;
}

/** SendStreamingMessage: the turn's task, then its updates as the run goes (stream.ts). */
async function* guardedStream(call: A2ACall, input: TurnInput): AsyncGenerator<StreamResponse> {
  let turn: Awaited<ReturnType<typeof startTurn>>;
  try {
    turn = await startTurn(call, { ...input, prefersAsync: false });
  } catch (error) {
    throw mapped(call, error);
  }
  try {
    yield* streamTask(call, { runId: turn.runId, after: 0, live: turn.live, settled: turn.settled });
  } catch (error) {
    throw mapped(call, error);
  }
}

/**
 * SubscribeToTask: the task, then its events after `lastEventId` (the request's Last-Event-ID: none, 0),
 * to its end. A Last-Event-ID that is not an event sequence is invalid params, as on every other stream.
 */
async function* resubscribe(
  call: A2ACall,
  id: string,
  lastEventId: string | undefined,
): AsyncGenerator<StreamResponse> {
  try {
    const sequence = lastEventSequence(lastEventId);
    if (sequence === null) {
      throw new DomainError("INVALID_REQUEST", LAST_EVENT_ID_RULE, { facts: { field: "Last-Event-ID" } });
    }
    const after = sequence ?? 0;
    const run = await readRun(call.deps, call.security, taskIdOf(id));
    if (isEnded(run.run.status) && after === 0) {
      yield { payload: { $case: "task", value: taskOf(run) } };
      return;
    }
    yield* streamTask(call, { runId: id, after, live: undefined, settled: undefined });
  } catch (error) {
    throw mapped(call, error);
  }
}

/**
 * ListTasks: the caller's own runs (`listRuns`, scope own: the listing of GET /v1/runs), newest first,
 * one page of it (`pageToken` is its cursor), kept to `contextId` (the run's conversation), `status`
 * (the run statuses {@link TASK_STATES} shows as that state; TASK_STATE_UNSPECIFIED keeps every state)
 * and `statusTimestampAfter` (the task's status changed strictly after it) by the store's read, so a
 * page may hold fewer tasks than `pageSize` while `nextPageToken` says there are more. `totalSize` is
 * every task those filters keep, counted (A2A 1.0: "total number of tasks available, before
 * pagination"). Each task has artifacts only with `includeArtifacts` (then its steps are read: one read
 * per task), and at most `historyLength` messages of history.
 * @throws RequestMalformedError (-32602) for a `pageSize` that is not a whole number from 1 to 100, a
 *   `status` that is no task state, or a `statusTimestampAfter` that is not an instant
 */
async function listTasks(call: A2ACall, params: ListTasksRequest): Promise<ListTasksResponse> {
  const pageSize = params.pageSize ?? LIST_TASKS_DEFAULT;
  // The spec's bounds, refused as its example refuses them: a clamped size would answer a page the
  // client did not ask for and never tell it why.
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > LIST_TASKS_MAX) {
    throw new RequestMalformedError(
      `pageSize must be a whole number from 1 to ${LIST_TASKS_MAX}, got ${params.pageSize}.`,
    );
  }
  // An unknown state would otherwise keep nothing and say nothing: the SDK reads it as UNRECOGNIZED (-1).
  if (params.status !== undefined && !(params.status >= 0 && params.status in TaskState)) {
    throw new RequestMalformedError("status must be one of the A2A task states, e.g. TASK_STATE_COMPLETED.");
  }
  const after = params.statusTimestampAfter || undefined;
  if (after !== undefined && Number.isNaN(Date.parse(after))) {
    throw new RequestMalformedError(
      `statusTimestampAfter must be an ISO 8601 instant, e.g. 2026-01-31T09:00:00Z; got ${JSON.stringify(after)}.`,
    );
  }
  const page = await listRuns(call.deps.runs, call.security, {
    limit: pageSize,
    cursor: params.pageToken || undefined,
    conversationId: params.contextId || undefined,
    statuses: params.status ? runStatusesShownAs(params.status) : undefined,
    updatedAfter: after,
    withTotal: true,
  });
  const tasks = await Promise.all(
    page.items.map(async (run) =>
      withHistoryLength(
        params.includeArtifacts
          ? taskOf(await readRun(call.deps, call.security, run.runId))
          : taskOf({ run, steps: [] }, false),
        params.historyLength,
      ),
    ),
  );
  return { tasks, nextPageToken: page.nextCursor ?? "", pageSize, totalSize: page.total ?? tasks.length };
}

/**
 * `task` with at most `historyLength` of its latest history messages (A2A 1.0: unset is no limit, zero or
 * less is none).
 */
function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength <= 0 ? [] : task.history.slice(-historyLength) };
}

/** The run statuses whose task state is `state` (the lines of {@link TASK_STATES} that show it). */
function runStatusesShownAs(state: TaskState): string[] {
  return Object.entries(TASK_STATES)
    .filter(([, line]) => line.state === state)
    .map(([status]) => status);
}

/**
 * What SendMessage asks: the message's text parts joined (the prompt), its id (the turn's key), its
 * context (the conversation), and whether the client wants an answer at once.
 * @throws RequestMalformedError without a message or a message id, or when the text is blank or longer
 *   than PROMPT_MAX_CHARS; ContentTypeNotSupportedError (-32005) for a part that is not text
 */
function turnInputOf(params: SendMessageRequest, _stream: boolean): TurnInput {
  const message: Message | undefined = params.message;
  if (!message) throw new RequestMalformedError("SendMessage needs a message.");
  // The card's one input mode is text/plain: a file, URL or data part would otherwise be dropped and the
  // task run on the words alone ("the attached invoice" with nothing attached), so it is refused whole.
  const other = message.parts.find((part) => part.content && part.content.$case !== "text");
  if (other?.content) {
    throw new ContentTypeNotSupportedError({
      message: `This agent takes text parts only (text/plain, its card's input mode); the message has a ${other.content.$case} part.`,
      metadata: { code: "INVALID_REQUEST", field: "message.parts" },
    });
  }
  const prompt = message.parts
    .map((part) => (part.content?.$case === "text" ? part.content.value : ""))
    .filter((text) => text.length > 0)
    .join("\n");
  if (!isUsableKey(message.messageId)) {
    throw new RequestMalformedError(
      `The message needs a messageId of 1 to ${MAX_KEY_LENGTH} printable ASCII characters.`,
    );
  }
  // The bounds of POST /v1/runs' prompt (trimmed, 1 to PROMPT_MAX_CHARS): a blank task would spend a
  // model call on nothing, and a longer one would get past the cap the REST route keeps.
  const length = prompt.trim().length;
  if (length === 0 || length > PROMPT_MAX_CHARS) {
    throw new RequestMalformedError(
      `The message needs a text part: the task, in words (1 to ${PROMPT_MAX_CHARS} characters).`,
    );
  }
  return {
    prompt,
    messageId: message.messageId,
    contextId: message.contextId || undefined,
    taskId: message.taskId ? taskIdOf(message.taskId, "message.taskId") : undefined,
    prefersAsync: params.configuration?.returnImmediately === true,
  };
}

/**
 * A task id from the request as a run id (RUN_ID_PATTERN), the rule of HTTP's `runId` path parameter.
 * @throws DomainError INVALID_REQUEST (RequestMalformedError, -32602) for one no run can have: empty, too
 *   long for the store's key or with other characters
 */
function taskIdOf(id: string, field = "id"): string {
  if (RUN_ID_PATTERN.test(id)) return id;
  throw new DomainError(
    "INVALID_REQUEST",
    `${field} must be a task id: 1 to 128 letters, digits, "_" or "-" (a task's id is its run id, run_…).`,
    { facts: { field } },
  );
}

/** The request's `Last-Event-ID` header as sent (the sequence of the last run event the client saw). */
function lastEventIdOf(context: ServerCallContext): string | undefined {
  const headers = context.state.get("headers") as Record<string, string | undefined> | undefined;
  return headers?.["last-event-id"];
}
