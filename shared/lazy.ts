/**
 * `load` run at most once at a time, its result kept once it succeeds: every call shares the pending or
 * settled promise. When it rejects, the promise is dropped and the next call runs `load` again — a
 * failed dynamic `import()` (a transient file-system or network error on a cold container) is retried by
 * the next caller instead of failing every call for the container's life.
 * @returns a function giving `load`'s promise; the callers of a failed attempt all get its error
 */
export function onceUntilFailed<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}
