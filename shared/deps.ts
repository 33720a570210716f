import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import OpenAI from "openai";
import type { ToolRegistry } from "./agent/dispatcher.js";
import type { Config } from "./config.js";
import { createDocumentClient } from "./store/dynamo.js";
import { LedgerStore } from "./store/ledger.js";
import { QuoteStore } from "./store/quotes.js";
import { accountingTools } from "./tools/registry.js";

/**
 * Everything a request handler needs, built once per Lambda container and injectable in tests.
 * - `openai`: the real openai client (any OpenAI-compatible server via `config.model.baseURL`)
 * - `ddb`: DynamoDB document client; `ledger`: the invoice store over it; `quotes`: the tax quote store
 */
export interface AppDeps {
  config: Config;
  ddb: DynamoDBDocumentClient;
  openai: OpenAI;
  ledger: LedgerStore;
  quotes: QuoteStore;
  tools: ToolRegistry;
}

/**
 * Placeholder key sent when none is configured: OpenAI rejects it, local OpenAI-compatible servers
 * ignore it.
 */
export const NO_API_KEY = "no-key-configured";

/**
 * Builds the dependencies from config. The openai client keeps the SDK's own retries (2, with backoff)
 * for 429 and 5xx; every request also carries the run's deadline signal and timeout.
 */
export function createDeps(config: Config): AppDeps {
  const ddb = createDocumentClient(config.table);
  const openai = new OpenAI({
    apiKey: config.model.apiKey ?? NO_API_KEY,
    baseURL: config.model.baseURL,
    maxRetries: 2,
  });
  const ledger = new LedgerStore(ddb, config.table.name);
  const quotes = new QuoteStore(ddb, config.table.name);
  const tools = accountingTools({ ledger, quotes, quoteTtlSeconds: config.quotes.ttlSeconds });
  return { config, ddb, openai, ledger, quotes, tools };
}
