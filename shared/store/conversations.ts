import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { conditionalPut } from "./conditional.js";
import { keys } from "./keys.js";
import { getItem, ITEM_ABSENT, isLive, splitItem, tableItem, tableKey } from "./table.js";

/**
 * Where a conversation that a protocol client names (an A2A `contextId`, an AG-UI `threadId`) has got
 * to, for one caller: `headRunId`, the run its latest turn started, and `priorRunId`, the run that turn
 * continued (null for the first turn), so a turn whose run never got going can be stepped over.
 * `turns` counts the turns started; `updatedAt` is ISO 8601.
 */
export interface ConversationHead {
  conversationId: string;
  userId: string;
  headRunId: string;
  priorRunId: string | null;
  turns: number;
  updatedAt: string;
}

/**
 * What {@link ConversationStore.advance} did: `advanced` (the head is now the new run), or `moved` (the
 * head was no longer the one expected: another turn of the conversation started first; nothing written).
 */
export type AdvanceResult = "advanced" | "moved";

/**
 * The heads of the conversations protocol clients name (docs/protocols.md): one item per (tenant, user,
 * conversation id), `TENANT#<tenantId>` / `CONVERSATION#<sha256([userId, conversationId])>` (keys.ts), so
 * two users' equal ids never meet, with the TTL of the runs (`RUN_TTL_SECONDS` from its last turn). Every
 * move is one conditional put on the head the caller read, so two turns started at once cannot both
 * continue the same run.
 */
export class ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: { ttlSeconds: number; now?: () => number },
  ) {}

  /**
   * The head of the caller's conversation `conversationId` (a consistent read), or undefined when it has
   * none (never started, or expired with its runs).
   * @throws the SDK's error
   */
  async head(
    tenantId: string,
    userId: string,
    conversationId: string,
  ): Promise<ConversationHead | undefined> {
    const item = await getItem(this.client, this.tableName, this.key(tenantId, userId, conversationId));
    if (!item) return undefined;
    const { attributes, expiresAtSeconds } = splitItem(item);
    if (!isLive(expiresAtSeconds, this.now())) return undefined;
    return attributes as unknown as ConversationHead;
  }

  /**
   * Moves the conversation's head from `from` (the head the caller read; undefined: the conversation has
   * none yet) to the run `to`, which continues `prior` (null: none).
   * @throws the SDK's error for anything but a failed condition
   */
  async advance(
    tenantId: string,
    userId: string,
    conversationId: string,
    move: { from: ConversationHead | undefined; to: string; prior: string | null },
  ): Promise<AdvanceResult> {
    const now = this.now();
    const head: ConversationHead = {
      conversationId,
      userId,
      headRunId: move.to,
      priorRunId: move.prior,
      turns: (move.from?.turns ?? 0) + 1,
      updatedAt: new Date(now).toISOString(),
    };
    const item = tableItem(
      this.key(tenantId, userId, conversationId),
      "conversation",
      head,
      Math.floor(now / 1000) + this.options.ttlSeconds,
    );
    const result = await conditionalPut(this.client, {
      tableName: this.tableName,
      item,
      ...(move.from
        ? {
            condition: "headRunId = :from AND turns = :turns",
            values: { ":from": move.from.headRunId, ":turns": move.from.turns },
          }
        : { condition: ITEM_ABSENT }),
    });
    return result.written ? "advanced" : "moved";
  }

  private key(tenantId: string, userId: string, conversationId: string) {
    return tableKey(tenantId, keys.conversation(userId, conversationId));
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}
