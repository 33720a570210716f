/**
 * The MCP Inspector the docs and `npm run dev` tell people to run against `/mcp`, pinned.
 *
 * Why a pin: `npx @modelcontextprotocol/inspector` unpinned resolves, on Node 20, to 0.15.0 (npm prefers
 * the newest version whose `engines` the running Node meets, and every later release asks for Node
 * 22.7.5), whose CLI has no `--header` and so cannot send the bearer token `/mcp` needs. A pinned later
 * version installs on Node 20 with npm's EBADENGINE warning and its CLI mode (`--cli`, the only mode the
 * docs use) runs there; CI runs the README's command as written against `npm run dev`
 * (`.ci/mcp-inspector`). The standalone `@modelcontextprotocol/inspector-cli` package is not used: its
 * CLI looks for its own package.json relative to the working directory and fails from a project's root.
 */
export const MCP_INSPECTOR = "@modelcontextprotocol/inspector@0.22.0";

/** The command prefix every documented Inspector call starts with: `npx -y <pinned package> --cli`. */
export const MCP_INSPECTOR_COMMAND = `npx -y ${MCP_INSPECTOR} --cli`;
