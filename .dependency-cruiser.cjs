/**
 * dependency-cruiser's rules for functions/ and shared/ (`npm run lint:deps`, part of `npm run lint`):
 * no import cycles, type-only imports included (`tsPreCompilationDeps`), and the layers' one-way flow
 * (docs/architecture.md): shared/ never imports an entry (functions/), the engine (shared/agent) never
 * imports the application layer (shared/runs) or the stores (their error vocabulary aside), and the
 * stores import neither.
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import cycle, type-only imports included: a layer would depend on one above it.",
      from: { path: "^(functions|shared)/" },
      to: { circular: true },
    },
    {
      name: "shared-not-entries",
      severity: "error",
      comment: "shared/ is below the entries: it never imports functions/.",
      from: { path: "^shared/" },
      to: { path: "^functions/" },
    },
    {
      name: "engine-not-application",
      severity: "error",
      comment:
        "The engine (shared/agent) knows neither the application layer, the stores (but their error vocabulary, shared/store/errors.ts) nor the protocols.",
      from: { path: "^shared/agent/" },
      to: { path: "^shared/(runs|mcp|a2a|agui|durable|deps)|^shared/store/(?!errors\\.ts$)" },
    },
    {
      name: "stores-below-all",
      severity: "error",
      comment: "The stores know no layer above them.",
      from: { path: "^shared/store/" },
      to: { path: "^shared/(runs|agent|mcp|a2a|agui|durable|tools|deps)" },
    },
    {
      name: "application-not-protocols",
      severity: "error",
      comment:
        "The application layer (shared/runs) knows no protocol adapter (MCP, A2A, AG-UI): the adapters call it, never the other way.",
      from: { path: "^shared/runs/" },
      to: { path: "^shared/(mcp|a2a|agui)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
