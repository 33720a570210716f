import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { afterAll, beforeAll } from "vitest";
import { createApp } from "../../functions/api/app.js";
import { createStreamHandler } from "../../functions/stream/entry.js";
import { createDevIssuer, type DevIssuerFile, devAuthSettings, mintToken } from "../../local/dev-auth.js";
import { createLambdaContext } from "../../local/lambda-context.js";
import {
  installLambdaStreaming,
  invokeStreaming,
  type StreamMetadata,
} from "../../local/lambda-streaming.js";
import { createTokenVerifier } from "../../shared/auth/token-verifier.js";
import type { Clock } from "../../shared/clock.js";
import type { ApiDeps } from "../../shared/deps.js";
import type { RunEvent } from "../../shared/runs/events.js";
import { startTestStack, type TestStack } from "./stack.js";

/** What an SSE body held, as eventsource-parser read it: events, comments and `retry:` hints. */
export interface SseRead {
  messages: EventSourceMessage[];
  comments: string[];
  retries: number[];
}

/** A parser that collects into `read` and calls `onMessage` for each event as it is parsed. */
export function sseCollector(onMessage: (message: EventSourceMessage) => void = () => {}) {
  const read: SseRead = { messages: [], comments: [], retries: [] };
  const parser = createParser({
    onEvent: (message) => {
      read.messages.push(message);
      onMessage(message);
    },
    onComment: (comment) => read.comments.push(comment),
    onRetry: (ms) => read.retries.push(ms),
  });
  return { read, feed: (chunk: string) => parser.feed(chunk) };
}

/**
 * The event types of the seed scenario's run (events/seed-scenario.json on the local planner), in order:
 * cycle 1 two calculateTax calls (GB, DE), cycle 2 recordInvoice, cycle 3 the answer.
 */
export const SEED_RUN_EVENT_TYPES = [
  "run.started",
  "model.call.finished",
  "tool.call.started",
  "tool.call.started",
  "tool.call.finished",
  "tool.call.finished",
  "model.call.finished",
  "tool.call.started",
  "tool.call.finished",
  "model.call.finished",
  "run.finished",
] as const;

/** Parses a whole SSE body (the buffered adapter's answer). */
export function parseSse(body: string): SseRead {
  const collector = sseCollector();
  collector.feed(body);
  return collector.read;
}

/** The run events of an SSE read (its `run.outcome` left out), parsed from their `data`. */
export function runEventsOf(read: SseRead): RunEvent[] {
  return read.messages.filter((m) => m.event !== "run.outcome").map((m) => JSON.parse(m.data) as RunEvent);
}

/**
 * The streaming entry (functions/stream/entry.ts) over a test stack's dependencies, with its own local
 * token issuer, invoked as the Lambda runtime would (local/lambda-streaming.ts).
 */
export interface StreamEntry {
  issuer: DevIssuerFile;
  token(claims: { sub: string; tenant_id: string; scope: string }): Promise<string>;
  /**
   * Sends a function URL event; resolves once the response metadata is set. `messages` fills as the
   * body is parsed; `hangUp()` destroys the stream as a client that leaves; `done` ends with the
   * invocation.
   */
  request(
    event: APIGatewayProxyEventV2,
    options?: { timeoutMs?: number; onMessage?: (message: EventSourceMessage) => void },
  ): Promise<{
    metadata: StreamMetadata;
    read: SseRead;
    body: Promise<string>;
    hangUp(): void;
    done: Promise<void>;
  }>;
}

/** Builds a {@link StreamEntry} over `deps`. */
export async function startStreamEntry(deps: ApiDeps): Promise<StreamEntry> {
  installLambdaStreaming();
  const issuer = await createDevIssuer();
  const verifier = createTokenVerifier(devAuthSettings(issuer));
  const app = createApp(deps);
  const handler = createStreamHandler(
    (request, env, executionCtx) => app.fetch(request, env, executionCtx as never),
    () => verifier,
  );
  return {
    issuer,
    token: (claims) => mintToken(issuer, claims),
    async request(event, options = {}) {
      const { stream, done } = invokeStreaming(
        handler,
        event,
        createLambdaContext(options.timeoutMs ?? 900_000, "boundloop-stream"),
      );
      const collector = sseCollector(options.onMessage);
      let text = "";
      const body = new Promise<string>((resolve) => {
        stream.on("data", (chunk: Buffer) => {
          const part = chunk.toString("utf8");
          text += part;
          collector.feed(part);
        });
        stream.on("end", () => resolve(text));
        stream.on("close", () => resolve(text));
      });
      const metadata = await Promise.race([stream.metadata, done.then(() => stream.metadata)]);
      return { metadata, read: collector.read, body, hangUp: () => stream.destroy(), done };
    },
  };
}

/** A test file's stack (logs silent, the model planning), its streaming entry, and a token of one user. */
export interface StreamingStack {
  stack: TestStack;
  entry: StreamEntry;
  token: string;
}

/**
 * Registers the file's hooks that start a {@link StreamingStack} with a token of `user` before its tests
 * and stop it after them.
 * @returns the stack, whose fields are set once the file's `beforeAll` has run
 */
export function streamingStack(user: { sub: string; tenant_id: string; scope: string }): StreamingStack {
  const started = {} as StreamingStack;
  beforeAll(async () => {
    started.stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
    started.entry = await startStreamEntry(started.stack.deps);
    started.token = await started.entry.token(user);
  });
  afterAll(async () => {
    await started.stack?.stop();
  });
  return started;
}

/**
 * A function URL event (payload 2.0, no authorizer: the function verifies the token) for `method path`
 * with a bearer token and optional headers and JSON body.
 */
export function functionUrlEvent(
  method: string,
  pathAndQuery: string,
  options: { token?: string; headers?: Record<string, string>; body?: unknown } = {},
): APIGatewayProxyEventV2 {
  const [path, query = ""] = pathAndQuery.split("?");
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: path ?? "/",
    rawQueryString: query,
    ...(query ? { queryStringParameters: Object.fromEntries(new URLSearchParams(query)) } : {}),
    headers: {
      host: "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-2.on.aws",
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    },
    requestContext: {
      accountId: "anonymous",
      apiId: "abcdefghijklmnopqrstuvwxyz012345",
      domainName: "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-2.on.aws",
      domainPrefix: "abcdefghijklmnopqrstuvwxyz012345",
      http: { method, path: path ?? "/", protocol: "HTTP/1.1", sourceIp: "203.0.113.12", userAgent: "test" },
      requestId: crypto.randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    isBase64Encoded: false,
  } as APIGatewayProxyEventV2;
}

/**
 * A clock the test moves: `sleep` resolves when {@link ManualClock.advance} passes its time (or its
 * signal aborts). `sleepers` counts the waits in progress, so a test can wait until the stream waits.
 */
export class ManualClock implements Clock {
  private time = Date.now();
  private readonly timers = new Set<{ at: number; resolve: () => void }>();

  now(): number {
    return this.time;
  }

  get sleepers(): number {
    return this.timers.size;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = {
        at: this.time + ms,
        resolve: () => {
          this.timers.delete(timer);
          signal.removeEventListener("abort", timer.resolve);
          resolve();
        },
      };
      if (signal.aborted) return resolve();
      signal.addEventListener("abort", timer.resolve, { once: true });
      this.timers.add(timer);
    });
  }

  /** Moves time on by `ms` and wakes every sleeper whose time has come. */
  advance(ms: number): void {
    this.time += ms;
    for (const timer of [...this.timers]) if (timer.at <= this.time) timer.resolve();
  }

  /** Resolves once some feed sleeps on this clock (polling the real event loop, not the clock). */
  async untilSleeping(): Promise<void> {
    while (this.timers.size === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}
