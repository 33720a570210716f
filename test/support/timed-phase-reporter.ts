import { writeFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";

/**
 * A vitest reporter for CI (.ci/run passes it with `--reporter`): when the first file of the `timed`
 * project (vitest.config.ts) is queued, it writes the file named by
 * `BOUNDLOOP_TIMED_PHASE_FILE` (nothing when that variable is unset). The timed files run one at a time,
 * so they leave a core idle; CI then starts its one-core steps beside them at the lowest priority
 * (`nice -n 19`), which only ever get a core the timed files leave idle. Before that mark the pass keeps
 * both cores busy, and a low-priority step beside it would be starved instead.
 */
export default class TimedPhaseReporter implements Reporter {
  private marked = false;

  onTestModuleQueued(testModule: TestModule): void {
    const file = process.env.BOUNDLOOP_TIMED_PHASE_FILE;
    if (this.marked || !file || testModule.project.name !== "timed") return;
    this.marked = true;
    writeFileSync(file, `${testModule.project.name} ${testModule.moduleId}\n`);
  }
}
