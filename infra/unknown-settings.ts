/**
 * The CDK context keys that look like deploy settings but are none: `-c maxCycle=3` (a typo) or
 * `-c MAX_CYCLES=3` (the function's variable, from docs/configuration.md) would otherwise deploy the
 * default without a word. The CDK's own keys all hold a `:` or a `-` (`aws:cdk:bundling-stacks`,
 * `@aws-cdk/core:…`, `cli-telemetry`), so only plain identifiers are judged.
 */

/** A context key shaped like a setting: letters, digits and underscores, starting with a letter. */
const SETTING_SHAPED = /^[A-Za-z][A-Za-z0-9_]*$/;

/** A name as compared for a suggestion: lower case, underscores dropped (`MAX_CYCLES` → `maxcycles`). */
const folded = (name: string) => name.toLowerCase().replaceAll("_", "");

/** Levenshtein distance of two short names (insertions, deletions and substitutions each cost 1). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(substitution, (previous[j] as number) + 1, (current[j - 1] as number) + 1));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * One issue per context key in `context` that is shaped like a setting and is not one of `known`:
 * "<key>: not a deploy setting (did you mean <known key>?)" when a known key is the same name in another
 * case or spelling (at most 2 edits apart once folded), or the variable a setting sets (`MAX_CYCLES` →
 * `maxCycles`, from `variables`); else "(docs/deploy.md lists them)".
 * @param context every context value the app holds (`node.getAllContext()`)
 * @param known the context keys the stack reads
 * @param variables each runtime setting's context key and the variable it sets
 */
export function unknownSettingIssues(
  context: Record<string, unknown>,
  known: readonly string[],
  variables: readonly { context: string; env: string }[],
): string[] {
  const knownSet = new Set(known);
  return Object.keys(context)
    .filter((key) => SETTING_SHAPED.test(key) && !knownSet.has(key))
    .map((key) => {
      const byVariable = variables.find((setting) => setting.env === key)?.context;
      const bySpelling = known
        .map((name) => ({ name, edits: distance(folded(key), folded(name)) }))
        .filter((candidate) => candidate.edits <= 2)
        .sort((x, y) => x.edits - y.edits)[0]?.name;
      const suggestion = byVariable ?? bySpelling;
      return `${key}: not a deploy setting (${suggestion ? `did you mean ${suggestion}?` : "docs/deploy.md lists them"})`;
    });
}
