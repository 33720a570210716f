declare module "dynalite" {
  import type { Server } from "node:http";
  /** dynalite's server factory (pure-JS DynamoDB implementation on LevelDB). */
  export default function dynalite(options?: {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
  }): Server;
}
