import { PassThrough } from "node:stream";
import type { Context, StreamifyHandler } from "aws-lambda";

/** The response metadata a streamed Lambda response starts with (status, headers, cookies). */
export interface StreamMetadata {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

/**
 * A local stand-in for the response stream the Lambda runtime hands a streaming function: a Node
 * stream the function writes its body to, with the metadata that `awslambda.HttpResponseStream.from`
 * sets before the body. Read it like any readable stream; `destroy()` is a client that hangs up.
 */
export class LocalResponseStream extends PassThrough {
  /** Resolves with the metadata once the function sets it (before its first body byte). */
  readonly metadata: Promise<StreamMetadata>;
  private setMeta: (metadata: StreamMetadata) => void = () => {};

  constructor() {
    super();
    this.metadata = new Promise((resolve) => {
      this.setMeta = resolve;
    });
  }

  /** Called by the stand-in `HttpResponseStream.from`. */
  setMetadata(metadata: StreamMetadata): void {
    this.setMeta(metadata);
  }

  /** The runtime's `setContentType`: metadata with that content type only. */
  setContentType(contentType: string): void {
    this.setMeta({ statusCode: 200, headers: { "content-type": contentType } });
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
 * a context. `done` settles when the invocation ends (after the body and any work it waits for).
 */
export function invokeStreaming(
  handler: StreamifyHandler,
  event: unknown,
  context: Context,
): { stream: LocalResponseStream; done: Promise<void> } {
  const stream = new LocalResponseStream();
  const done = Promise.resolve(handler(event, stream as never, context)).then(() => {
    // A stream the function never gave metadata (it threw first) still answers.
    stream.setMetadata({ statusCode: 500, headers: {} });
  });
  return { stream, done };
}
