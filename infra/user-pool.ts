import { Duration, type RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import {
  AccountRecovery,
  ClientAttributes,
  FeaturePlan,
  LambdaVersion,
  Mfa,
  OAuthScope,
  StringAttribute,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  UserPoolOperation,
} from "aws-cdk-lib/aws-cognito";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Architecture, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { ROLE_PERMISSIONS, ROLES, TENANT_ATTRIBUTE, USER_POOL_POLICY } from "../shared/user-roles.js";
import { API_HANDLER } from "./bundle.js";
import { bundledCode } from "./lambda-code.js";

/** The pre token generation trigger's entry point (exports `handler`), relative to PROJECT_ROOT. */
export const PRE_TOKEN_ENTRY = "functions/pre-token/handler.ts";

/** Props of {@link BuiltInUserPool}. */
export interface BuiltInUserPoolProps {
  /** `personal` deploy setting: no deletion protection, and the pool is deleted with the stack. */
  personal: boolean;
  removalPolicy: RemovalPolicy;
  logRetention: RetentionDays;
  /** OAuth callback URLs of the app client (a browser console's sign-in). */
  callbackUrls: string[];
}

/**
 * The stack's own identity provider, used when no `jwtIssuer` is given: a Cognito user pool, one public
 * app client, a group per role (shared/user-roles.ts) and the pre token generation trigger
 * (functions/pre-token/handler.ts) that writes the tenant and the role's permissions into access tokens.
 *
 * - Pool: administrators create users (no self sign-up), sign-in with the email address, the
 *   `custom:tenant_id` attribute (mutable by administrators only: the client may not write it), MFA
 *   optional with authenticator apps (TOTP; SMS would need an SNS role and costs per message), account
 *   recovery by verified email, deletion protection unless `personal`.
 * - Feature plan Essentials: access token customization (trigger event V2_0) needs Essentials or Plus.
 *   Essentials is the default plan of new pools and shares the account's free tier of monthly active
 *   users; Plus (threat protection) has no free tier and is not used (docs/deploy.md, "What it costs").
 * - App client: public (no secret, so a browser or CLI can use it), authorization code grant with PKCE
 *   for a console, USER_SRP_AUTH and USER_PASSWORD_AUTH for the command line (`npm run user -- token`),
 *   token revocation, no user-existence errors.
 *
 * The API's JWT authorizer trusts {@link issuer} with {@link audience} (the client id), which Cognito
 * access tokens carry as `client_id`.
 */
export class BuiltInUserPool extends Construct {
  readonly pool: UserPool;
  readonly client: UserPoolClient;
  readonly trigger: LambdaFunction;
  /** `https://cognito-idp.<region>.amazonaws.com/<userPoolId>`, the tokens' `iss`. */
  readonly issuer: string;
  /** The app client id: the audience the authorizer accepts. */
  readonly audience: string;

  constructor(scope: Construct, id: string, props: BuiltInUserPoolProps) {
    super(scope, id);
    this.pool = new UserPool(this, "Pool", {
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      customAttributes: { [TENANT_ATTRIBUTE]: new StringAttribute({ minLen: 1, maxLen: 64, mutable: true }) },
      passwordPolicy: {
        minLength: USER_POOL_POLICY.minPasswordLength,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(USER_POOL_POLICY.temporaryPasswordDays),
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      featurePlan: FeaturePlan.ESSENTIALS,
      deletionProtection: !props.personal,
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.pool).acknowledge(
      {
        id: "AwsSolutions-COG2",
        reason:
          "MFA is optional by design: each user may turn on an authenticator app (TOTP); requiring it would block the first sign-in of a personal deployment.",
      },
      {
        id: "AwsSolutions-COG8",
        reason:
          "Essentials, not Plus: Plus's threat protection has no free tier and is billed per monthly active user; Essentials gives access token customization within the free tier.",
      },
    );

    for (const role of ROLES) {
      this.pool.addGroup(`Group-${role}`, {
        groupName: role,
        description: `boundloop ${role}: ${ROLE_PERMISSIONS[role].join(", ")}`,
      });
    }

    this.client = this.pool.addClient("Client", {
      generateSecret: false,
      authFlows: { userSrp: true, userPassword: true },
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.COGNITO_ADMIN],
        callbackUrls: props.callbackUrls,
      },
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      readAttributes: new ClientAttributes()
        .withStandardAttributes({ email: true, emailVerified: true, fullname: true })
        .withCustomAttributes(TENANT_ATTRIBUTE),
      // Listed explicitly: without a list every mutable attribute, the tenant included, is writable.
      writeAttributes: new ClientAttributes().withStandardAttributes({ fullname: true }),
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      accessTokenValidity: Duration.hours(USER_POOL_POLICY.accessTokenHours),
      idTokenValidity: Duration.hours(USER_POOL_POLICY.accessTokenHours),
      refreshTokenValidity: Duration.days(USER_POOL_POLICY.refreshTokenDays),
    });

    this.trigger = this.preTokenTrigger(props);
    this.pool.addTrigger(UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG, this.trigger, LambdaVersion.V2_0);

    // As the tokens' `iss` reads (and as CDK's HttpUserPoolAuthorizer builds it).
    this.issuer = `https://cognito-idp.${Stack.of(this).region}.amazonaws.com/${this.pool.userPoolId}`;
    this.audience = this.client.userPoolClientId;
  }

  /** The trigger function: bundled like the API's, its own log group, a role that may only write logs. */
  private preTokenTrigger(props: BuiltInUserPoolProps): LambdaFunction {
    const logs = new LogGroup(this, "PreTokenLogs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    const role = new Role(this, "PreTokenRole", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: "boundloop pre token generation trigger: its log group only",
    });
    logs.grantWrite(role);
    return new LambdaFunction(this, "PreTokenFunction", {
      description: "boundloop user pool: writes tenant_id and the role's billing: scopes into access tokens",
      code: bundledCode(PRE_TOKEN_ENTRY),
      handler: API_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: 256,
      // Cognito waits 5 s for a trigger's answer.
      timeout: Duration.seconds(5),
      role,
      logGroup: logs,
    });
  }
}
