// A proxyless gRPC client: no sidecar and no load balancer in the path. @grpc/grpc-js-xds asks the
// control plane named in the bootstrap file for the target's listener, routes, clusters and
// endpoints, and balances the calls itself. From the repository root:
//   GRPC_XDS_BOOTSTRAP=examples/grpc-client/bootstrap.json node examples/grpc-client/echo-client.mjs
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as grpcXds from '@grpc/grpc-js-xds';
import * as protoLoader from '@grpc/proto-loader';

grpcXds.register(); // adds the xds: resolver and the xDS load-balancing policies to @grpc/grpc-js

const protoFile = fileURLToPath(new URL('../../demo/echo.proto', import.meta.url));
const { portolan } = grpc.loadPackageDefinition(protoLoader.loadSync(protoFile, { keepCase: true }));
const client = new portolan.echo.Echo('xds:///echo.example.internal:50051', grpc.credentials.createInsecure());

// A call every 50 ms; each line names the backend that answered.
setInterval(() => {
  client.Echo({ message: 'hello' }, { deadline: Date.now() + 2000 }, (err, reply) =>
    console.log(err ? `error: ${grpc.status[err.code]} ${err.details}` : `answered by ${reply.backend}`),
  );
}, 50);
