import { afterAll, beforeAll, beforeEach } from "vitest";
import type { LocalModelServer } from "../../local/model-server.js";

/**
 * Registers the calling file's hooks around what `start` starts (a stack with a local model server):
 * started before the file's tests and stopped after them; with `planner`, its model server goes back to
 * the planner before each test (a test may have scripted it). Each file has its own, so files of one
 * suite share no model script and no table.
 * @returns the started value, whose fields are set (copied in) once the file's `beforeAll` has run
 */
export function startedForFile<Started extends { model: LocalModelServer; stop(): Promise<void> }>(
  start: () => Promise<Started>,
  options: { planner?: boolean } = {},
): Started {
  const started = {} as Started;
  beforeAll(async () => {
    Object.assign(started, await start());
  });
  afterAll(async () => {
    await started.stop?.();
  });
  if (options.planner) {
    beforeEach(() => {
      started.model.usePlanner();
    });
  }
  return started;
}
