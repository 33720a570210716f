/**
 * boundloop's A2A request handler (`A2ARequestHandler` of `@a2a-js/sdk/server`, served through the
 * SDK's `JsonRpcTransportHandler` by serve.ts): every method maps A2A onto the runs layer through its
 * protocol port (shared/runs/protocol-port.ts) and nothing else, for the caller the verified token
 * names (never the request's `tenant` field). A task is a run; SendMessage starts a turn keyed by the
 * message id; the context is the conversation. docs/a2a.md.
 */
import type {
  AgentCard,
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
import {
  A2AError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server";
import type { ApiDeps } from "../deps.js";
import { toProblem } from "../errors.js";
import type { SecurityContext } from "../identity.js";
import { cancelOwnRun, findOwnRun, listOwnRuns } from "../runs/protocol-port.js";
import { type StreamOptions, streamTask } from "./stream.js";
import { taskOf } from "./tasks.js";
import { startTurn, type TurnInput } from "./turn.js";

/** Page size of ListTasks when the client names none, and the most one page holds. */
export const LIST_TASKS_DEFAULT = 50;
const LIST_TASKS_MAX = 100;

/** What one request's handler knows: the API's dependencies, the verified caller, the card, the request. */
export interface A2ACall {
  deps: ApiDeps;
  security: SecurityContext;
  card: AgentCard;
  lambdaRemainingMs?: number | undefined;
  stream: StreamOptions;
}

/**
 * Builds the handler of one request. Domain refusals become A2A errors by {@link toA2AError}: the
 * problem's stable `code` is in the error's metadata, never an internal error's text.
 */
export function createA2AHandler(call: A2ACall): A2ARequestHandler {
  const { deps, security } = call;
  const guarded =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (error) {
        throw toA2AError(error);
      }
    };
  const found = async (id: string) => {
    const run = await findOwnRun(deps, security, id);
    if (!run) throw new TaskNotFoundError(`There is no task ${id}.`);
    return run;
  };
  const noPush = async (): Promise<never> => {
    throw new PushNotificationNotSupportedError("This agent sends no push notifications.");
  };
  return {
    getAgentCard: async () => call.card,
    getAuthenticatedExtendedAgentCard: async () => call.card,
    sendMessage: guarded(async (params: SendMessageRequest, _context: ServerCallContext) =>
      sendMessage(call, turnInputOf(params, false)),
    ),
    sendMessageStream: (params: SendMessageRequest) => guardedStream(call, turnInputOf(params, false)),
    getTask: guarded(async (params: GetTaskRequest) => taskOf(await found(params.id))),
    cancelTask: guarded(async (params: CancelTaskRequest) => {
      await found(params.id);
      try {
        const after = await cancelOwnRun(deps, security, params.id);
        if (!after) throw new TaskNotFoundError(`There is no task ${params.id}.`);
        return taskOf(after);
      } catch (error) {
        if (toProblem(error).code === "RUN_NOT_RUNNING") {
          throw new TaskNotCancelableError(
            `The task ${params.id} cannot be cancelled: it has ended, or it runs within its request (only a task in working or input-required state that runs durably can be).`,
          );
        }
        throw error;
      }
    }),
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
 */
async function sendMessage(call: A2ACall, input: TurnInput): Promise<Task> {
  const turn = await startTurn(call, input);
  const outcome = await turn.settled;
  turn.live?.close();
  if (outcome.error) throw outcome.error;
  const run = await findOwnRun(call.deps, call.security, turn.runId);
  if (!run) throw new TaskNotFoundError(`The task ${turn.runId} did not start; send the message again.`);
  return taskOf(run);
}

/** SendStreamingMessage: the turn's task, then its updates as the run goes (stream.ts). */
async function* guardedStream(call: A2ACall, input: TurnInput): AsyncGenerator<StreamResponse> {
  let turn: Awaited<ReturnType<typeof startTurn>>;
  try {
    turn = await startTurn(call, { ...input, prefersAsync: false });
  } catch (error) {
    throw toA2AError(error);
  }
  yield* streamTask(call, { runId: turn.runId, after: 0, live: turn.live, settled: turn.settled });
}

/** SubscribeToTask: the task, then its events after `after` (Last-Event-ID), to its end. */
async function* resubscribe(call: A2ACall, id: string, after: number): AsyncGenerator<StreamResponse> {
  const run = await findOwnRun(call.deps, call.security, id);
  if (!run) throw new TaskNotFoundError(`There is no task ${id}.`);
  if (isEnded(run.run.status) && after === 0) {
    yield { payload: { $case: "task", value: taskOf(run) } };
    return;
  }
  yield* streamTask(call, { runId: id, after, live: undefined, settled: undefined });
}

/** Whether a run status is final (nothing more will happen to it). */
function isEnded(status: string): boolean {
  return status !== "running" && status !== "awaiting_approval";
}

/**
 * ListTasks: the caller's runs, newest first, one page of the run listing (`pageToken` is its cursor);
 * `contextId` and `status` filter within the page read, so a filtered page may hold fewer tasks than
 * `pageSize` while `nextPageToken` says there are more.
 */
async function listTasks(call: A2ACall, params: ListTasksRequest): Promise<ListTasksResponse> {
  const pageSize = Math.min(Math.max(params.pageSize ?? LIST_TASKS_DEFAULT, 1), LIST_TASKS_MAX);
  const page = await listOwnRuns(call.deps, call.security, {
    limit: pageSize,
    cursor: params.pageToken || undefined,
  });
  const tasks = page.runs
    .map((run) => taskOf({ run, steps: [], pendingApprovals: [] }, false))
    .filter((task) => !params.contextId || task.contextId === params.contextId)
    .filter((task) => !params.status || task.status?.state === params.status);
  return { tasks, nextPageToken: page.nextCursor ?? "", pageSize, totalSize: tasks.length };
}

/**
 * What SendMessage asks: the message's text parts joined (the prompt), its id (the turn's key), its
 * context (the conversation), and whether the client wants an answer at once.
 * @throws RequestMalformedError without a message, a message id or any text
 */
function turnInputOf(params: SendMessageRequest, _stream: boolean): TurnInput {
  const message: Message | undefined = params.message;
  if (!message) throw new RequestMalformedError("SendMessage needs a message.");
  const prompt = message.parts
    .map((part) => (part.content?.$case === "text" ? part.content.value : ""))
    .filter((text) => text.length > 0)
    .join("\n");
  if (!message.messageId) throw new RequestMalformedError("The message needs a messageId.");
  if (!prompt) throw new RequestMalformedError("The message needs a text part: the task, in words.");
  return {
    prompt,
    messageId: message.messageId,
    contextId: message.contextId || undefined,
    taskId: message.taskId || undefined,
    prefersAsync: params.configuration?.returnImmediately === true,
  };
}

/** The `Last-Event-ID` of the request (the sequence of the last run event the client saw), else 0. */
function lastEventIdOf(context: ServerCallContext): number {
  const headers = context.state.get("headers") as Record<string, string | undefined> | undefined;
  const value = headers?.["last-event-id"]?.trim();
  return value && /^[0-9]{1,15}$/.test(value) ? Number(value) : 0;
}

/**
 * A refusal of the runs layer as an A2A error: NOT_FOUND → TaskNotFoundError; other client errors
 * (4xx) → RequestMalformedError, or UnsupportedOperationError for a conflict (a turn of the context
 * still running, the message id in use); the problem's `code` in the error's metadata. A server error
 * is its generic problem sentence, never the error's own text. A2A errors pass as they are.
 */
export function toA2AError(error: unknown): Error {
  if (error instanceof A2AError) return error;
  const problem = toProblem(error);
  const options = { message: problem.message, metadata: { code: problem.code } };
  if (problem.code === "NOT_FOUND") return new TaskNotFoundError(options);
  if (problem.status === 409) return new UnsupportedOperationError(options);
  if (problem.status < 500) return new RequestMalformedError(options);
  const internal = new Error(problem.message);
  return internal;
}
