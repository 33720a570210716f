import { App } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { DeploySettingsError, RUNTIME_SETTINGS, readDeploySettings } from "../infra/settings.js";
import { ConfigSchema, loadConfig } from "../shared/config.js";

// Every number setting is read from plain decimal digits only, by its one schema in shared/config/: at
// cold start (loadConfig) and at synth (the deploy settings), each refusal naming the setting.

const shape = ConfigSchema.shape as unknown as Record<
  string,
  { safeParse(value: unknown): { success: boolean; data?: unknown } }
>;

/** Each variable whose value is a number, with a value it accepts (its default, else a limit of 1000). */
const NUMBERS: Array<{ name: string; valid: string }> = Object.keys(shape).flatMap((name) => {
  const schema = shape[name] as (typeof shape)[string];
  const unset = schema.safeParse(undefined);
  if (unset.success && typeof unset.data === "number") return [{ name, valid: String(unset.data) }];
  const limit = schema.safeParse("1000");
  return limit.success && typeof limit.data === "number" ? [{ name, valid: "1000" }] : [];
});

/** What JavaScript's Number() reads as the same number but is not plain decimal digits. */
const lookalikes = (valid: string) => [
  `0x${Number(valid).toString(16)}`,
  `${valid}e0`,
  ` ${valid}`,
  `${valid} `,
  `+${valid}`,
  `${valid}.0`,
];

describe("number settings", () => {
  it("are found: every bounded integer of the schema, the quotas' limits included", () => {
    const names = NUMBERS.map((number) => number.name);
    expect(names).toEqual(
      expect.arrayContaining(["MAX_CYCLES", "SECRET_CACHE_SECONDS", "USER_RUNS_PER_MINUTE"]),
    );
    expect(names.length).toBeGreaterThan(30);
  });

  it("refuse at cold start anything but decimal digits (hex, exponent, spaces, a sign, a fraction), naming the variable", () => {
    for (const { name, valid } of NUMBERS) {
      expect(loadConfig({ [name]: valid }), name).toBeDefined();
      for (const value of lookalikes(valid)) {
        expect(() => loadConfig({ [name]: value }), `${name}=${JSON.stringify(value)}`).toThrow(
          `Invalid configuration: ${name}: must be a whole number in plain decimal digits, e.g. 300 (no spaces, sign, exponent, fraction or 0x)`,
        );
      }
    }
  });

  it("read an empty or blank value as unset (the default), and keep leading zeros' decimal value", () => {
    const defaults = loadConfig({});
    expect(loadConfig({ SECRET_CACHE_SECONDS: "" }).model.secretCacheSeconds).toBe(
      defaults.model.secretCacheSeconds,
    );
    expect(loadConfig({ MAX_CYCLES: "  " }).limits.maxCycles).toBe(defaults.limits.maxCycles);
    expect(loadConfig({ MAX_CYCLES: "010" }).limits.maxCycles).toBe(10);
  });

  it("refuse the same values at synth, each naming the deploy setting and its variable", () => {
    const settings = RUNTIME_SETTINGS.flatMap((setting) => {
      const number = NUMBERS.find((candidate) => candidate.name === setting.env);
      return number ? [{ ...setting, valid: number.valid }] : [];
    });
    expect(settings.length).toBeGreaterThan(20);
    for (const variant of [0, 1, 2, 3, 4, 5]) {
      const context = Object.fromEntries(
        settings.map(({ context, valid }) => [context, lookalikes(valid)[variant] as string]),
      );
      let error: unknown;
      try {
        readDeploySettings(new App({ context }));
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(context)).toBeInstanceOf(DeploySettingsError);
      expect((error as DeploySettingsError).issues).toEqual(
        settings.map(
          ({ context, env }) =>
            `${context} (${env}): must be a whole number in plain decimal digits, e.g. 300 (no spaces, sign, exponent, fraction or 0x)`,
        ),
      );
    }
    const valid = Object.fromEntries(settings.map(({ context, valid }) => [context, valid]));
    expect(readDeploySettings(new App({ context: { ...valid, maxCycles: 7 } })).config.MAX_CYCLES).toBe(7);
  });
});
