import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** One request an AWS client sent to the stand-in: as it arrived on the socket. */
export interface ReceivedRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * What the stand-in answers one request with: status, headers, and a JSON body, or `xml` (a query
 * protocol's answer, such as CloudFormation's), or none.
 */
export interface StandInReply {
  status: number;
  headers?: Record<string, string>;
  json?: unknown;
  xml?: string;
}

/**
 * A local HTTP stand-in of an AWS endpoint (node:http on 127.0.0.1, a free port): each request is
 * recorded and answered by `reply`, so a test drives the real SDK client — its serializer, signer and
 * error parser — against the shapes the service documents. No AWS behaviour is emulated.
 */
export interface AwsStandIn {
  endpoint: string;
  requests: ReceivedRequest[];
  /** Sets how the next requests are answered (in order; the last one repeats). */
  answer(...replies: Array<StandInReply | ((request: ReceivedRequest) => StandInReply)>): void;
  close(): Promise<void>;
}

/** Static credentials for a client pointed at a stand-in (the signer needs some; nothing checks them). */
export const STAND_IN_CREDENTIALS = { accessKeyId: "AKIDSTANDIN", secretAccessKey: "stand-in-secret" };

/** Starts an {@link AwsStandIn}; every request is answered 500 until {@link AwsStandIn.answer} is called. */
export async function startAwsStandIn(): Promise<AwsStandIn> {
  const requests: ReceivedRequest[] = [];
  let replies: Array<StandInReply | ((request: ReceivedRequest) => StandInReply)> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stand-in");
      const request: ReceivedRequest = {
        method: req.method ?? "",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(request);
      const next = replies.length > 1 ? replies.shift() : replies[0];
      const reply = typeof next === "function" ? next(request) : (next ?? { status: 500, json: {} });
      const body = reply.xml ?? (reply.json === undefined ? "" : JSON.stringify(reply.json));
      const type = reply.xml === undefined ? "application/json" : "text/xml";
      res.writeHead(reply.status, { "content-type": type, ...reply.headers });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    answer: (...next) => {
      replies = next;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A REST-JSON error as AWS services answer one (Lambda): the status, `x-amzn-ErrorType` naming the
 * exception, and a body with its `Type` and `message`.
 */
export function restJsonError(status: number, type: string, message: string): StandInReply {
  return {
    status,
    headers: {
      "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazonaws.awsbackendservice/`,
    },
    json: { Type: "User", message },
  };
}
