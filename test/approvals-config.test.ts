import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../shared/config.js";

describe("APPROVAL_RULES and APPROVAL_TIMEOUT_SECONDS (shared/config.ts)", () => {
  it("default to no approvals and a 24 h timeout", () => {
    const config = loadConfig({});
    expect(config.approvals).toEqual({ rules: {}, timeoutSeconds: 86_400 });
  });

  it("parse per-tool, per-currency thresholds", () => {
    const config = loadConfig({
      APPROVAL_RULES: '{"recordInvoice":{"GBP":"1000.00","BDT":"50000"}}',
      APPROVAL_TIMEOUT_SECONDS: "3600",
    });
    expect(config.approvals).toEqual({
      rules: { recordInvoice: { GBP: "1000.00", BDT: "50000" } },
      timeoutSeconds: 3600,
    });
  });

  it.each([
    ["not JSON", "{recordInvoice", /APPROVAL_RULES: must be a JSON object/],
    ["an unknown tool", '{"deleteLedger":{"GBP":"1"}}', /APPROVAL_RULES.*deleteLedger/],
    ["a currency that is not ISO 4217", '{"recordInvoice":{"gbp":"1"}}', /ISO 4217 currency codes/],
    [
      "a number instead of a decimal string",
      '{"recordInvoice":{"GBP":1000}}',
      /APPROVAL_RULES\.recordInvoice\.GBP/,
    ],
    ["a negative threshold", '{"recordInvoice":{"GBP":"-1"}}', /decimal strings in major units/],
  ])("refuse %s at cold start with a clear error", (_case, value, message) => {
    expect(() => loadConfig({ APPROVAL_RULES: value })).toThrow(ConfigError);
    expect(() => loadConfig({ APPROVAL_RULES: value })).toThrow(message);
  });

  it("refuse a timeout over 30 days", () => {
    expect(() => loadConfig({ APPROVAL_TIMEOUT_SECONDS: String(31 * 86_400) })).toThrow(
      /APPROVAL_TIMEOUT_SECONDS/,
    );
  });
});
