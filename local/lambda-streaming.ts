import { PassThrough } from "node:stream";
import type { Context, StreamifyHandler } from "aws-lambda";

/** The response metadata a streamed Lambda response starts with (status, headers, cookies). */
export interface StreamMetadata {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

/**
 * What a function URL answers when a streaming function ends without having sent its metadata (it wrote
 * nothing after `HttpResponseStream.from`, or it threw first): 502, as the URL has no status to give.
 */
export const NO_PRELUDE_STATUS = 502;

/**
 * A local stand-in for the response stream the Lambda runtime hands a streaming function: a Node
 * stream the function writes its body to, with the metadata that `awslambda.HttpResponseStream.from`
 * sets before the body. As in the runtime (aws-lambda-nodejs-runtime-interface-client's
 * HttpResponseStream), the metadata is sent with the first `write` — an empty one counts — and never
 * if the function writes nothing. Read it like any readable stream; `destroy()` is a client that hangs up.
 */
export class LocalResponseStream extends PassThrough {
  /** Resolves with the metadata once it is sent (with the function's first write). */
  readonly metadata: Promise<StreamMetadata>;
  private setMeta: (metadata: StreamMetadata) => void = () => {};
  private pending: StreamMetadata | undefined;
  private sent = false;

  constructor() {
    super();
    this.metadata = new Promise((resolve) => {
      this.setMeta = resolve;
    });
  }

  /** Whether the metadata went out (the function wrote at least once after setting it). */
  get metadataSent(): boolean {
    return this.sent;
  }

  /** Called by the stand-in `HttpResponseStream.from`: the metadata waits for the first write. */
  setMetadata(metadata: StreamMetadata): void {
    this.pending = metadata;
  }

  /** The runtime's `setContentType`: metadata with that content type only. */
  setContentType(contentType: string): void {
    this.setMetadata({ statusCode: 200, headers: { "content-type": contentType } });
  }

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    if (!this.sent && this.pending) {
      this.sent = true;
      this.setMeta(this.pending);
    }
    return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }

  /**
   * The invocation ended: a function that never sent its metadata is answered as the function URL
   * answers it ({@link NO_PRELUDE_STATUS}).
   */
  invocationEnded(): void {
    if (this.sent) return;
    this.sent = true;
    this.setMeta({ statusCode: NO_PRELUDE_STATUS, headers: { "content-type": "application/json" } });
  }
}

/**
 * Installs `globalThis.awslambda` as the Lambda Node.js runtime provides it to streaming functions,
 * when it is absent (outside Lambda): `streamifyResponse` returns the handler as is (the runtime only
 * marks it), `HttpResponseStream.from` records the metadata on a {@link LocalResponseStream}. Call it
 * before importing a module that builds a streaming handler (functions/stream/).
 */
export function installLambdaStreaming(): void {
  // Other libraries may define a partial `awslambda` (without the streaming members): fill those in.
  const global = globalThis as { awslambda?: Record<string, unknown> };
  const runtime = global.awslambda ?? {};
  global.awslambda = runtime;
  runtime.streamifyResponse ??= <T extends StreamifyHandler>(handler: T): T => handler;
  runtime.HttpResponseStream ??= {
    from(stream: LocalResponseStream, metadata: StreamMetadata) {
      stream.setMetadata(metadata);
      return stream;
    },
  };
}

/**
 * Invokes a streaming handler the way the runtime does: with a {@link LocalResponseStream}, the event and
 * a context. `done` settles when the invocation ends (after the body and any work it waits for); a
 * function that threw, or wrote nothing, then gets the function URL's {@link NO_PRELUDE_STATUS}.
 */
export function invokeStreaming(
  handler: StreamifyHandler,
  event: unknown,
  context: Context,
): { stream: LocalResponseStream; done: Promise<void> } {
  const stream = new LocalResponseStream();
  const done = Promise.resolve(handler(event, stream as never, context)).then(
    () => stream.invocationEnded(),
    (error: unknown) => {
      stream.invocationEnded();
      throw error;
    },
  );
  return { stream, done };
}
