/**
 * Making one short-term Bedrock API key, exactly as AWS's @aws/bedrock-token-generator `getToken` makes it
 * (test/bedrock.test.ts compares the two byte for byte), from the AWS SDK's own ESM parts: its SigV4
 * signer, hash and request types. The generator itself is CommonJS: bundled, its `require()`s of these
 * ESM packages made esbuild wrap every SDK module they reach in a lazy initializer, 10 kB more
 * JavaScript in the API bundle than these imports (about 1.5 kB: the signer is there already for the
 * SDK clients). Not loaded lazily for the same reason: a chunk of its own would cost more glue than it
 * holds.
 */
import { formatUrl } from "@aws-sdk/util-format-url";
import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity } from "@smithy/types";

/** The prefix of every Bedrock API key (the generator's `AUTH_PREFIX`). */
export const BEDROCK_KEY_PREFIX = "bedrock-api-key-";

/** The longest life a short-term key may be signed for: 12 h, in s (the generator's maximum). */
export const MAX_BEDROCK_KEY_LIFETIME_SECONDS = 43_200;

/** The host, service and action a key presigns (Bedrock's API keys, docs: "api-keys-how"). */
const KEY_HOST = "bedrock.amazonaws.com";

/**
 * A short-term Bedrock API key: `POST https://bedrock.amazonaws.com/?Action=CallWithBearerToken`
 * SigV4-presigned for service `bedrock` in `region` with `credentials`, valid `expiresInSeconds` from
 * `signedAt` (epoch ms), `&Version=1` appended, base64-encoded behind {@link BEDROCK_KEY_PREFIX}. Local
 * only: a few HMACs, no network call.
 * @throws RangeError when `expiresInSeconds` is not in (0, {@link MAX_BEDROCK_KEY_LIFETIME_SECONDS}]
 */
export async function makeBedrockKey(options: {
  credentials: AwsCredentialIdentity;
  region: string;
  expiresInSeconds: number;
  signedAt: number;
}): Promise<string> {
  const { expiresInSeconds } = options;
  if (!(expiresInSeconds > 0 && expiresInSeconds <= MAX_BEDROCK_KEY_LIFETIME_SECONDS)) {
    throw new RangeError(
      `A Bedrock API key lives (0, ${MAX_BEDROCK_KEY_LIFETIME_SECONDS}] s, not ${expiresInSeconds}.`,
    );
  }
  const signer = new SignatureV4({
    service: "bedrock",
    region: options.region,
    credentials: options.credentials,
    sha256: Hash.bind(null, "sha256"),
  });
  const request = new HttpRequest({
    method: "POST",
    protocol: "https",
    hostname: KEY_HOST,
    headers: { host: KEY_HOST },
    path: "/",
    query: { Action: "CallWithBearerToken" },
  });
  const presigned = await signer.presign(request, {
    expiresIn: expiresInSeconds,
    signingDate: new Date(options.signedAt),
  });
  const url = `${formatUrl(presigned).replace("https://", "")}&Version=1`;
  return `${BEDROCK_KEY_PREFIX}${Buffer.from(url, "utf8").toString("base64")}`;
}
