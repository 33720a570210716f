/**
 * `npm run user -- <command>`: the users of a deployed stack's built-in Cognito user pool
 * (infra/user-pool.ts), with the AWS credentials and region of the shell (AWS_PROFILE, AWS_REGION).
 *
 *   add    --email E --tenant T --role writer|approver|reader [--send-email]
 *   list   [--tenant T]
 *   remove --email E
 *   token  --email E [--mfa-code 123456]
 *
 * The pool and its app client come from the stack's outputs (CloudFormation DescribeStacks of
 * `--stack-name`, default Boundloop: UserPoolId, UserPoolClientId), or from `--pool-id`/`--client-id`.
 *
 * `add` creates the user with the tenant attribute (which only an administrator can write) and puts
 * it in the role's group; it prints a generated temporary password (Cognito sends nothing), or with
 * `--send-email` lets Cognito email one. `token` signs in with the pool's USER_PASSWORD_AUTH flow
 * (password from BOUNDLOOP_PASSWORD, else asked on the terminal), answers NEW_PASSWORD_REQUIRED on the
 * first sign-in (BOUNDLOOP_NEW_PASSWORD, else asked) and SOFTWARE_TOKEN_MFA (`--mfa-code`, else asked),
 * and prints only the access token on stdout, for `authorization: Bearer …` and `npm run smoke`.
 */
import { randomInt } from "node:crypto";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import {
  AdminAddUserToGroupCommand,
  AdminCreateUserCommand,
  AdminDeleteUserCommand,
  type AuthenticationResultType,
  type ChallengeNameType,
  CognitoIdentityProviderClient,
  InitiateAuthCommand,
  paginateListUsers,
  paginateListUsersInGroup,
  RespondToAuthChallengeCommand,
  type UserType,
} from "@aws-sdk/client-cognito-identity-provider";
import {
  isRole,
  ROLE_PERMISSIONS,
  ROLES,
  TENANT_ID_PATTERN,
  TENANT_USER_ATTRIBUTE,
  USER_POOL_POLICY,
} from "../shared/user-roles.js";
import { formatTable } from "./format.js";

const USAGE = `usage: npm run user -- <command> [options]

  add    --email <e> --tenant <t> --role ${ROLES.join("|")} [--send-email]
  list   [--tenant <t>]
  remove --email <e>
  token  --email <e> [--mfa-code <code>]   prints an access token (password: $BOUNDLOOP_PASSWORD or asked)

  --stack-name <name>  the deployed stack whose outputs name the pool (default Boundloop)
  --pool-id <id>       the user pool id instead of the stack's UserPoolId output
  --client-id <id>     the app client id instead of the stack's UserPoolClientId output`;

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The pool and client a command works on. */
interface PoolRef {
  poolId: string;
  clientId: string | undefined;
}

/**
 * The pool id and client id: the flags when given, else the stack's outputs.
 * @throws Error when the stack has no UserPoolId output (it trusts another issuer)
 */
async function resolvePool(values: {
  "stack-name"?: string;
  "pool-id"?: string;
  "client-id"?: string;
}): Promise<PoolRef> {
  if (values["pool-id"]) return { poolId: values["pool-id"], clientId: values["client-id"] };
  const stackName = values["stack-name"] ?? "Boundloop";
  const cloudformation = new CloudFormationClient({});
  try {
    const { Stacks } = await cloudformation
      .send(new DescribeStacksCommand({ StackName: stackName }))
      .catch((error: unknown) => {
        const said = error instanceof Error ? error.message : String(error);
        throw new Error(
          `Stack ${stackName} could not be read: ${said}. npm run user manages the users of a deployed stack, with your AWS credentials and the stack's region (export AWS_REGION=<region>, or set one in your profile); --stack-name names another stack.`,
        );
      });
    const outputs = Object.fromEntries(
      (Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey, output.OutputValue]),
    );
    const poolId = outputs.UserPoolId;
    if (!poolId) {
      throw new Error(
        `Stack ${stackName} has no UserPoolId output: it trusts your own issuer (jwtIssuer), so manage users there.`,
      );
    }
    return { poolId, clientId: values["client-id"] ?? outputs.UserPoolClientId };
  } finally {
    cloudformation.destroy();
  }
}

/**
 * A temporary password meeting the pool's policy (infra/user-pool.ts USER_POOL_POLICY): 20 characters
 * with lower and upper case letters, digits and symbols, from the CSPRNG.
 */
export function temporaryPassword(length = Math.max(20, USER_POOL_POLICY.minPasswordLength)): string {
  const classes = ["abcdefghijkmnopqrstuvwxyz", "ABCDEFGHJKLMNPQRSTUVWXYZ", "23456789", "!#%+-=?@^_"];
  const pick = (set: string) => set[randomInt(set.length)] as string;
  const chars = classes.map(pick);
  const all = classes.join("");
  while (chars.length < length) chars.push(pick(all));
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j] as string, chars[i] as string];
  }
  return chars.join("");
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function required(value: string | undefined, flag: string): string {
  if (!value) throw new Error(`${flag} is required.\n${USAGE}`);
  return value;
}

async function addUser(
  cognito: CognitoIdentityProviderClient,
  pool: PoolRef,
  values: { email?: string; tenant?: string; role?: string; "send-email"?: boolean },
): Promise<void> {
  const email = required(values.email, "--email").trim();
  const tenant = required(values.tenant, "--tenant").trim();
  const role = required(values.role, "--role");
  if (!EMAIL.test(email)) throw new Error(`--email ${email} is not an email address.`);
  if (!TENANT_ID_PATTERN.test(tenant))
    throw new Error("--tenant must be 1-64 characters of A-Z a-z 0-9 _ -.");
  if (!isRole(role)) throw new Error(`--role must be one of ${ROLES.join(", ")}.`);
  const password = values["send-email"] ? undefined : temporaryPassword();
  await cognito.send(
    new AdminCreateUserCommand({
      UserPoolId: pool.poolId,
      Username: email,
      UserAttributes: [
        { Name: "email", Value: email },
        { Name: "email_verified", Value: "true" },
        { Name: TENANT_USER_ATTRIBUTE, Value: tenant },
      ],
      ...(password
        ? { TemporaryPassword: password, MessageAction: "SUPPRESS" }
        : { DesiredDeliveryMediums: ["EMAIL"] }),
    }),
  );
  await cognito.send(
    new AdminAddUserToGroupCommand({ UserPoolId: pool.poolId, Username: email, GroupName: role }),
  );
  console.log(`Added ${email}: tenant ${tenant}, role ${role} (${ROLE_PERMISSIONS[role].join(", ")}).`);
  if (password) {
    console.log(
      `Temporary password (valid ${USER_POOL_POLICY.temporaryPasswordDays} days, shown once): ${password}\n` +
        `Next: npm run -s user -- token --email ${email}   (asks for it, then for a new password)`,
    );
  } else {
    console.log(`Cognito emails ${email} a temporary password.`);
  }
}

const attribute = (user: UserType, name: string) =>
  user.Attributes?.find((a) => a.Name === name)?.Value ?? "";

async function listUsers(
  cognito: CognitoIdentityProviderClient,
  pool: PoolRef,
  values: { tenant?: string },
): Promise<void> {
  const roles = new Map<string, string[]>();
  for (const role of ROLES) {
    for await (const page of paginateListUsersInGroup(
      { client: cognito },
      { UserPoolId: pool.poolId, GroupName: role },
    )) {
      for (const user of page.Users ?? []) {
        const name = user.Username ?? "";
        roles.set(name, [...(roles.get(name) ?? []), role]);
      }
    }
  }
  const rows: string[][] = [];
  for await (const page of paginateListUsers({ client: cognito }, { UserPoolId: pool.poolId })) {
    for (const user of page.Users ?? []) {
      const tenant = attribute(user, TENANT_USER_ATTRIBUTE);
      if (values.tenant && tenant !== values.tenant) continue;
      rows.push([
        attribute(user, "email") || (user.Username ?? ""),
        tenant || "(none)",
        (roles.get(user.Username ?? "") ?? []).join(",") || "(none)",
        user.UserStatus ?? "",
        user.Enabled === false ? "disabled" : "enabled",
      ]);
    }
  }
  rows.sort((a, b) => `${a[1]} ${a[0]}`.localeCompare(`${b[1]} ${b[0]}`));
  console.log(formatTable(["email", "tenant", "role", "status", "enabled"], rows));
}

async function removeUser(
  cognito: CognitoIdentityProviderClient,
  pool: PoolRef,
  values: { email?: string },
): Promise<void> {
  const email = required(values.email, "--email").trim();
  await cognito.send(new AdminDeleteUserCommand({ UserPoolId: pool.poolId, Username: email }));
  console.log(`Removed ${email}.`);
}

/** Reads one line from the terminal (stderr shows the question); hidden when `secret`. */
async function ask(question: string, secret: boolean): Promise<string> {
  if (!process.stdin.isTTY) {
    throw new Error(`${question.replace(/:\s*$/, "")}: no terminal to ask on; set it in the environment.`);
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  if (secret) {
    // Echo nothing typed after the question.
    const output = rl as unknown as { _writeToOutput: (text: string) => void };
    let asked = false;
    output._writeToOutput = (text: string) => {
      if (!asked) process.stderr.write(text);
      asked = true;
    };
  }
  try {
    return await new Promise<string>((resolve) => rl.question(question, resolve));
  } finally {
    rl.close();
    if (secret) process.stderr.write("\n");
  }
}

/**
 * Signs in with USER_PASSWORD_AUTH and answers the challenges Cognito may ask (at most three rounds).
 * @returns the tokens
 * @throws Error on a challenge this command cannot answer, or Cognito's error (NotAuthorizedException, …)
 */
async function signIn(
  cognito: CognitoIdentityProviderClient,
  clientId: string,
  email: string,
  mfaCode: string | undefined,
): Promise<AuthenticationResultType> {
  const password = process.env.BOUNDLOOP_PASSWORD ?? (await ask(`Password for ${email}: `, true));
  let step = await cognito.send(
    new InitiateAuthCommand({
      AuthFlow: "USER_PASSWORD_AUTH",
      ClientId: clientId,
      AuthParameters: { USERNAME: email, PASSWORD: password },
    }),
  );
  for (let round = 0; round < 3; round++) {
    if (step.AuthenticationResult) return step.AuthenticationResult;
    const challenge = step.ChallengeName as ChallengeNameType | undefined;
    const username = step.ChallengeParameters?.USER_ID_FOR_SRP ?? email;
    let responses: Record<string, string>;
    if (challenge === "NEW_PASSWORD_REQUIRED") {
      log(
        `First sign-in of ${email}: choose a new password (${USER_POOL_POLICY.minPasswordLength}+ characters, upper and lower case, digits, symbols).`,
      );
      const newPassword = process.env.BOUNDLOOP_NEW_PASSWORD ?? (await ask("New password: ", true));
      responses = { USERNAME: username, NEW_PASSWORD: newPassword };
    } else if (challenge === "SOFTWARE_TOKEN_MFA") {
      const code = mfaCode ?? (await ask("Authenticator app code: ", false));
      responses = { USERNAME: username, SOFTWARE_TOKEN_MFA_CODE: code.trim() };
    } else {
      throw new Error(
        `Cognito asks for ${challenge ?? "an unknown challenge"}, which this command does not answer.`,
      );
    }
    step = await cognito.send(
      new RespondToAuthChallengeCommand({
        ClientId: clientId,
        ChallengeName: challenge,
        Session: step.Session,
        ChallengeResponses: responses,
      }),
    );
  }
  if (step.AuthenticationResult) return step.AuthenticationResult;
  throw new Error("Cognito kept asking for challenges; sign-in not completed.");
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      email: { type: "string" },
      tenant: { type: "string" },
      role: { type: "string" },
      "send-email": { type: "boolean" },
      "mfa-code": { type: "string" },
      "stack-name": { type: "string" },
      "pool-id": { type: "string" },
      "client-id": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || !command || !["add", "list", "remove", "token"].includes(command)) {
    log(USAGE);
    return values.help ? 0 : 2;
  }
  const pool = await resolvePool(values);
  const cognito = new CognitoIdentityProviderClient({});
  try {
    if (command === "add") await addUser(cognito, pool, values);
    else if (command === "list") await listUsers(cognito, pool, values);
    else if (command === "remove") await removeUser(cognito, pool, values);
    else {
      if (!pool.clientId) throw new Error("The app client id is unknown: pass --client-id.");
      const email = required(values.email, "--email").trim();
      const tokens = await signIn(cognito, pool.clientId, email, values["mfa-code"]);
      process.stdout.write(`${tokens.AccessToken}\n`);
    }
    return 0;
  } finally {
    cognito.destroy();
  }
}

// The AWS SDK's "Node 20 support ends" notice is noise for a command-line tool.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const name = error instanceof Error && error.name !== "Error" ? `${error.name}: ` : "";
    log(`user: ${name}${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
