// The scenario of the authorization end-to-end tests: a proxyless gRPC server `payments` (namespace
// shop, labels app=payments) as a real @grpc/grpc-js-xds XdsServer that takes its listener from
// Portolan, serving the Echo service and a second method of it (Shout, same messages) for per-method
// policies; the config files that make it STRICT-mTLS, ISTIO_MUTUAL for its callers, and an ALLOW
// policy; and xDS clients calling either method as a given service account.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { XdsChannelCredentials, XdsServer, XdsServerCredentials } from '@grpc/grpc-js-xds';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../xds/generators/grpc/server-listener.js';
import { addEchoService, ECHO_PROTO, echoClientClass, type EchoClient } from './echo-backend.js';
import { workloadBootstrap, type WorkloadCerts } from './workload-certs.js';

export const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';
export const PAYMENTS = 'payments.shop.internal';
export const TARGET = `xds:///${PAYMENTS}:7070`;
export const ECHO = '/portolan.echo.Echo/Echo';
/** A second method on the same service (same messages), for per-method policies. */
export const SHOUT = '/portolan.echo.Echo/Shout';

/** The service, its ISTIO_MUTUAL DestinationRule and its STRICT PeerAuthentication, serving on `port`. */
export function paymentsConfig(port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: payments, namespace: shop }
spec:
  hosts: [${PAYMENTS}]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.1, ports: { grpc: ${port} }, serviceAccount: payments }]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: payments, namespace: shop }
spec:
  host: ${PAYMENTS}
  trafficPolicy: { tls: { mode: ISTIO_MUTUAL } }
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: { name: payments, namespace: shop }
spec:
  selector: { matchLabels: { app: payments } }
  mtls: { mode: STRICT }
`;
}

/** An ALLOW policy on payments for these service accounts of namespace shop. */
export function allowPolicy(serviceAccounts: readonly string[]): string {
  return `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: { name: payments-callers, namespace: shop }
spec:
  selector: { matchLabels: { app: payments } }
  action: ALLOW
  rules:
    - from:
        - source:
            principals: [${serviceAccounts.map((sa) => `cluster.local/ns/shop/sa/${sa}`).join(', ')}]
`;
}

/** Writes a config file the way an editor's save-by-rename does (the watcher sees one change). */
export function writeConfigFile(configDir: string, name: string, text: string): void {
  const tmp = join(configDir, `.${name}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, join(configDir, name));
}

function echoMethod(): grpc.MethodDefinition<object, object> {
  const def = protoLoader.loadSync(ECHO_PROTO, { keepCase: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    portolan: { echo: { Echo: { service: grpc.ServiceDefinition } } };
  };
  const echo = pkg.portolan.echo.Echo.service.Echo;
  if (!echo) throw new Error('Echo method missing from demo/echo.proto');
  return echo as grpc.MethodDefinition<object, object>;
}

export interface PaymentsServer {
  /** Calls that reached the service, per method. */
  served(): { echo: number; shout: number };
  stop(): void;
}

/**
 * Starts the payments XdsServer on 127.0.0.1:`port`, its identity and node from `certs`. XdsServer's
 * bind completes once it serves (a valid listener arrived); `awaitServing: false` returns at once,
 * for a server that is expected not to serve.
 */
export async function startPaymentsServer(
  xdsAddress: string,
  certs: WorkloadCerts,
  port: number,
  { awaitServing = true }: { awaitServing?: boolean } = {},
): Promise<PaymentsServer> {
  const bootstrap = {
    ...workloadBootstrap(xdsAddress, 'payments-1', await certs.certDir('payments'), {
      labels: { app: 'payments' },
    }),
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
  };
  const server = new XdsServer({ [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap) });
  const echo = addEchoService(server, 'payments-1');
  let shouts = 0;
  server.addService(
    { Shout: { ...echoMethod(), path: SHOUT, originalName: 'Shout' } },
    {
      Shout: (_call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
        shouts += 1;
        cb(null, { message: 'HI', backend: 'payments-1' });
      },
    },
  );
  const serving = new Promise<void>((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${port}`,
      new XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
      (err) => (err ? reject(err) : resolve()),
    ),
  );
  if (awaitServing) await serving;
  else serving.catch(() => undefined);
  return {
    served: () => ({ echo: echo.calls(), shout: shouts }),
    stop: () => server.forceShutdown(),
  };
}

/** An xDS client of payments (ISTIO_MUTUAL through XdsChannelCredentials) as `serviceAccount` of shop. */
export async function paymentsClient(
  xdsAddress: string,
  certs: WorkloadCerts,
  serviceAccount: string,
  nodeId: string,
): Promise<EchoClient> {
  const Client = echoClientClass();
  const bootstrap = workloadBootstrap(xdsAddress, nodeId, await certs.certDir(serviceAccount));
  return new Client(TARGET, new XdsChannelCredentials(grpc.credentials.createInsecure()), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap),
  });
}

export interface Outcome {
  readonly ok: boolean;
  readonly code?: grpc.status;
  readonly details?: string;
}

export const ALLOWED: Outcome = { ok: true };
export const DENIED: Outcome = {
  ok: false,
  code: grpc.status.PERMISSION_DENIED,
  details: 'Unauthorized RPC rejected',
};

/** One call of `method`; its outcome (never rejects). */
export function callMethod(client: EchoClient, method: string): Promise<Outcome> {
  const { requestSerialize, responseDeserialize } = echoMethod();
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      method,
      requestSerialize,
      responseDeserialize,
      { message: 'hi' },
      new grpc.Metadata(),
      { deadline: Date.now() + 5000 },
      (err) => resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true }),
    );
  });
}
