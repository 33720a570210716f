import { once } from "node:events";
import { createServer, type Server } from "node:net";

/** A port held for a server that starts later: `release()` frees it just before that server listens. */
export interface PortReservation {
  release(): Promise<void>;
}

/** The port a local server wanted is taken: one line saying which and what to do. */
export class PortInUseError extends Error {}

/**
 * Listens on `host`:`port` now, so a port in use is refused before anything else starts (DynamoDB Local,
 * the model server, the handler), and holds it until `release()`. Port 0 holds nothing: the server picks
 * a free port itself.
 * @throws PortInUseError when the port is in use (EADDRINUSE); the listen error otherwise
 */
export async function reservePort(host: string, port: number): Promise<PortReservation> {
  if (port === 0) return { release: async () => undefined };
  const server: Server = createServer();
  server.listen({ host, port, exclusive: true });
  try {
    await once(server, "listening");
  } catch (error) {
    if ((error as { code?: string }).code === "EADDRINUSE") {
      throw new PortInUseError(
        `port ${port} on ${host} is in use (another npm run dev?): stop that server, or use --port <n> (--port 0 picks a free one).`,
      );
    }
    throw error;
  }
  return {
    async release() {
      server.close();
      await once(server, "close");
    },
  };
}
