import { randomUUID } from "node:crypto";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { type BaseEvent, type EventType, HttpAgent } from "@ag-ui/client";
import { createHandler } from "../../functions/api/app-handler.js";
import {
  createDevIssuer,
  type DevIssuerFile,
  devAuthSettings,
  devIssuerEnv,
  mintToken,
} from "../../local/dev-auth.js";
import { type DevServer, type Handler, startDevServer } from "../../local/dev-server.js";
import { createTokenVerifier } from "../../shared/auth/token-verifier.js";
import type { ApiDepsOptions } from "../../shared/deps.js";
import { startBundleGateway } from "./bundle-gateway.js";
import { startTestStack, type TestStack } from "./stack.js";

/**
 * The callers of the isolation tests: two users of one tenant (alice a billing writer, who may record
 * invoices; bob with no billing permission: each sees only their own runs), a user of another tenant with
 * every permission, and carol, a billing reader of the first tenant (who may see any of its runs, as GET
 * /v1/runs/{runId} lets her: shared/runs/access.ts).
 */
export const CALLERS = {
  alice: { sub: "usr_alice", tenant_id: "tenant_uk_01", scope: "billing:write" },
  bob: { sub: "usr_bob", tenant_id: "tenant_uk_01", scope: "openid" },
  mallory: { sub: "usr_mallory", tenant_id: "tenant_other_02", scope: "billing:read billing:write" },
  carol: { sub: "usr_carol", tenant_id: "tenant_uk_01", scope: "billing:read" },
} as const;

/**
 * The API behind the dev gateway (real JWT check, real API Gateway events) on the suite's DynamoDB Local:
 * the unbundled handler in this process ({@link startProtocolStack}) or the built bundle in a process of
 * its own ({@link startBundledProtocolStack}). `stack` is the table and model server it uses, with the
 * unbundled stores to read back what it wrote.
 */
export interface ProtocolStack {
  stack: TestStack;
  dev: DevServer;
  issuer: DevIssuerFile;
  tokens: Record<keyof typeof CALLERS, string>;
  /** A fetch that sends `token` as the bearer token (what a client's auth handler does). */
  fetchAs(token: string): typeof fetch;
  stop(): Promise<void>;
}

/**
 * Starts a {@link ProtocolStack} serving the unbundled handler; `env` overrides configuration variables,
 * `options` the dependencies' (an injected clock).
 */
export async function startProtocolStack(
  env: Record<string, string> = {},
  options: ApiDepsOptions = {},
): Promise<ProtocolStack> {
  const issuer = await createDevIssuer();
  const stack = await startTestStack({ ...devIssuerEnv(issuer), ...env }, options);
  const dev = await startDevServer({
    serve: {
      handler: createHandler(stack.deps) as Handler,
      verifier: createTokenVerifier(devAuthSettings(issuer)),
      timeoutMs: 29_000,
    },
    host: "127.0.0.1",
    port: 0,
    log: () => undefined,
  });
  return protocolStackOf(stack, dev, issuer);
}

/**
 * Starts a {@link ProtocolStack} serving the built API bundle `bundleFile` (infra/bundle.ts's index.mjs)
 * in a Node process of its own (test/support/bundle-gateway.ts); `env` adds configuration variables.
 * `dev.output()` is what that process logged.
 */
export async function startBundledProtocolStack(
  bundleFile: string,
  env: Record<string, string> = {},
): Promise<ProtocolStack & { dev: { output(): string } }> {
  const issuer = await createDevIssuer();
  const settings = { ...devIssuerEnv(issuer), ...env };
  const stack = await startTestStack(settings);
  try {
    return protocolStackOf(stack, await startBundleGateway(bundleFile, stack.config, settings), issuer);
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** The stack, its gateway and the issuer, with a token of each of {@link CALLERS}. */
async function protocolStackOf<Dev extends DevServer>(
  stack: TestStack,
  dev: Dev,
  issuer: DevIssuerFile,
): Promise<ProtocolStack & { dev: Dev }> {
  const tokens = {
    alice: await mintToken(issuer, { ...CALLERS.alice }),
    bob: await mintToken(issuer, { ...CALLERS.bob }),
    mallory: await mintToken(issuer, { ...CALLERS.mallory }),
    carol: await mintToken(issuer, { ...CALLERS.carol }),
  };
  return {
    stack,
    dev,
    issuer,
    tokens,
    fetchAs: (token) => (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    },
    async stop() {
      await dev.stop();
      await stack.stop();
    },
  };
}

/** The official A2A client for the agent at `url`, built from the card it discovers there, fetching with `fetchImpl`. */
export function a2aClientAt(url: string, fetchImpl: typeof fetch): Promise<Client> {
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }).createFromUrl(url);
}

/**
 * The ids of the tasks `client`'s caller is shown by ListTasks (any state, the first page), asking for
 * `tenant` (default: none named, the caller's own).
 */
export async function listedTaskIds(client: Client, tenant = ""): Promise<string[]> {
  const listed = await client.listTasks({
    tenant,
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: "",
    statusTimestampAfter: undefined,
  });
  return listed.tasks.map((task) => task.id);
}

/**
 * A2A SendMessage parameters: a user message of `text` with a fresh message id (or `messageId`), in the
 * context `contextId` when given (else a new one).
 */
export function a2aMessage(text: string, options: { messageId?: string; contextId?: string } = {}) {
  return {
    message: {
      messageId: options.messageId ?? randomUUID(),
      contextId: options.contextId ?? "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [
        {
          content: { $case: "text" as const, value: text },
          metadata: undefined,
          filename: "",
          mediaType: "text/plain",
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
    tenant: "",
  };
}

/** The ErrorInfo metadata of an A2A error the client threw (where the domain's code travels). */
export function errorInfoOf(error: unknown): Record<string, string> | undefined {
  return (error as { data?: Array<{ metadata?: Record<string, string> }> }).data?.[0]?.metadata;
}

/** The first part's value of each of a task's artifacts named `name` (a tool's results, or "answer"), in order. */
export function artifactValues(
  task: { artifacts: Array<{ name: string; parts: Array<{ content?: { $case: string; value: unknown } }> }> },
  name: string,
): unknown[] {
  return task.artifacts
    .filter((artifact) => artifact.name === name)
    .map((artifact) => artifact.parts[0]?.content?.value);
}

/**
 * The official AG-UI client for the agent at `url` (its /v1/agui) as the caller of `token`, on thread
 * `threadId` (default a new one), with `prompt` as its first user message.
 */
export function aguiAgentAt(url: string, token: string, prompt: string, threadId: string = randomUUID()) {
  return new HttpAgent({
    url,
    headers: { authorization: `Bearer ${token}` },
    threadId,
    initialMessages: [{ id: randomUUID(), role: "user", content: prompt }],
  });
}

/** Runs `agent` as run `runId` (default a new one) and collects every event it applied, in order. */
export async function runAgui(agent: HttpAgent, runId: string = randomUUID()) {
  const events: BaseEvent[] = [];
  const outcome = await agent.runAgent({ runId }, { onEvent: ({ event }) => void events.push(event) });
  return { events, outcome, runId };
}

/** The events of `type`, as `T` (the event's fields). */
export function eventsOfType<T = Record<string, unknown>>(events: BaseEvent[], type: EventType): T[] {
  return events.filter((event) => event.type === type) as unknown as T[];
}

/** The seed scenario's prompt (events/seed-scenario.json). */
export const SEED_PROMPT =
  "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 500 EUR for a client in Germany (DE). If tax calculation succeeds, record the invoice for the UK client.";
