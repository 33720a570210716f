import { fileURLToPath } from "node:url";
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import { HttpApi, HttpMethod } from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import { AttributeType, Billing, TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { Architecture, Runtime } from "aws-cdk-lib/aws-lambda";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import type { Construct } from "constructs";
import { TABLE_SCHEMA } from "../shared/store/keys.js";

/**
 * The boundloop stack: one DynamoDB table, one Lambda (functions/api/handler.ts) and an HTTP API.
 * Bundling uses the local esbuild devDependency, never Docker.
 */
export class BoundloopStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    const table = new TableV2(this, "Table", {
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.sortKey, type: AttributeType.STRING },
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const fn = new NodejsFunction(this, "ApiFunction", {
      entry: fileURLToPath(new URL("../functions/api/handler.ts", import.meta.url)),
      handler: "handler",
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(29),
      memorySize: 1024,
      environment: { TABLE_NAME: table.tableName, NODE_OPTIONS: "--enable-source-maps" },
      bundling: {
        format: OutputFormat.ESM,
        minify: true,
        sourceMap: true,
        forceDockerBundling: false,
        banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
      },
    });
    table.grantReadWriteData(fn);

    const api = new HttpApi(this, "HttpApi");
    const integration = new HttpLambdaIntegration("ApiIntegration", fn);
    api.addRoutes({ path: "/healthz", methods: [HttpMethod.GET], integration });
    api.addRoutes({ path: "/v1/runs", methods: [HttpMethod.POST], integration });

    new CfnOutput(this, "ApiUrl", { value: api.apiEndpoint });
    new CfnOutput(this, "TableName", { value: table.tableName });
  }
}
