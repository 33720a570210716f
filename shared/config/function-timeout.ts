/**
 * The function's timeout in seconds, as deployed (infra/stack.ts) and as the local scripts run it
 * (`npm start`, `npm run invoke`, `npm run dev`): below API Gateway HTTP API's 30 s maximum
 * integration timeout (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html),
 * so the function answers (or times out) before the gateway gives up on it. A module of its own, without
 * the configuration's schema, so a local command can name it before it loads anything heavy.
 */
export const FUNCTION_TIMEOUT_SECONDS = 29;
