// The real @grpc/grpc-js-xds client, pointed at a Portolan instance with a per-channel bootstrap.
import * as grpc from '@grpc/grpc-js';
import * as grpcXds from '@grpc/grpc-js-xds';
import { echoClientClass, type EchoClient } from './echo-backend.js';

grpcXds.register();

// grpc-js-xds reads a bootstrap per channel from this option (its own tests do the same), so one test
// process can talk to several control planes.
export const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

/** What a test may say about its client's node besides the id: where it runs, and more metadata. */
export interface NodeOptions {
  readonly locality?: { readonly region?: string; readonly zone?: string; readonly sub_zone?: string };
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export function bootstrapFor(xdsAddress: string, nodeId: string, node: NodeOptions = {}): object {
  return {
    xds_servers: [
      { server_uri: xdsAddress, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ],
    node: {
      id: nodeId,
      cluster: 'e2e',
      metadata: { NAMESPACE: 'default', ...node.metadata },
      locality: node.locality ?? {},
    },
  };
}

export function xdsEchoClient(
  target: string,
  xdsAddress: string,
  nodeId: string,
  node: NodeOptions = {},
): EchoClient {
  const Client = echoClientClass();
  return new Client(target, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrapFor(xdsAddress, nodeId, node)),
  });
}
