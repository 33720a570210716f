import { describe, expect, it } from "vitest";
import { consolePolicy, consoleResponse } from "../functions/api/console.js";

// The console's server side without a browser: the page, its sign-in settings and its policy.

describe("functions/api/console.ts", () => {
  it("allows connections to this origin only, plus the issuer (and a Cognito issuer's sign-in domains)", () => {
    expect(consolePolicy(undefined)).toContain("connect-src 'self';");
    expect(consolePolicy("https://login.example.com/realms/acme")).toContain(
      "connect-src 'self' https://login.example.com;",
    );
    expect(consolePolicy("https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbC")).toContain(
      "connect-src 'self' https://cognito-idp.eu-west-2.amazonaws.com https://*.auth.eu-west-2.amazoncognito.com;",
    );
    for (const policy of [consolePolicy(undefined), consolePolicy("https://login.example.com")]) {
      expect(policy).toMatch(/^default-src 'none'; script-src 'self'; style-src 'self';/);
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toContain("require-trusted-types-for 'script'");
      expect(policy).not.toContain("unsafe");
    }
  });

  it("names the issuer and client id on the page only when both are set, escaped, and then allows the issuer", async () => {
    const none = await consoleResponse("/console", {
      issuer: "https://login.example.com",
      clientId: undefined,
    });
    expect(none.body).not.toContain("boundloop-oidc");
    expect(none.headers["content-security-policy"]).toContain("connect-src 'self';");
    const oidc = await consoleResponse("/console", {
      issuer: "https://login.example.com",
      clientId: 'console"><script>',
    });
    expect(oidc.body).toContain('<meta name="boundloop-oidc-issuer" content="https://login.example.com">');
    expect(oidc.body).toContain('content="console&quot;&gt;&lt;script&gt;"');
    expect(oidc.headers["content-security-policy"]).toContain(
      "connect-src 'self' https://login.example.com;",
    );
    expect(oidc.headers["referrer-policy"]).toBe("no-referrer");
  });

  it("answers 404 for anything but the page and the built files", async () => {
    const settings = { issuer: undefined, clientId: undefined };
    for (const path of [
      "/console/assets/",
      "/console/assets/manifest.json",
      "/console/assets/../build.ts",
      "/console/x",
      // Names every plain object has: never a file, whatever the asset table is made of.
      "/console/assets/constructor",
      "/console/assets/__proto__",
      "/console/assets/toString",
      "/console/assets/hasOwnProperty",
    ]) {
      expect((await consoleResponse(path, settings)).status, path).toBe(404);
    }
  });
});
