// gRPC Echo backends for end-to-end tests: each answers with its own name, so a test sees which
// backend a call reached.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const ECHO_PROTO = fileURLToPath(new URL('../../../test/support/echo.proto', import.meta.url));

interface EchoRequest {
  message: string;
}
interface EchoReply {
  message: string;
  backend: string;
}

type EchoClientCtor = new (
  target: string,
  creds: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => EchoClient;

export interface EchoClient extends grpc.Client {
  Echo(
    req: EchoRequest,
    options: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: EchoReply) => void,
  ): void;
}

function echoPackage(): { service: grpc.ServiceDefinition; Client: EchoClientCtor } {
  const def = protoLoader.loadSync(ECHO_PROTO, { keepCase: true, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    portolan: { test: { Echo: EchoClientCtor & { service: grpc.ServiceDefinition } } };
  };
  const Echo = pkg.portolan.test.Echo;
  return { service: Echo.service, Client: Echo };
}

export interface EchoBackend {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts a backend on `address:port` (port 0 picks one). `before`, when given, runs before each
 * answer (a test holds calls open with it); plaintext unless `credentials` say otherwise.
 */
export async function startEchoBackend(
  name: string,
  address: string,
  port = 0,
  before?: (message: string) => Promise<void>,
  credentials = grpc.ServerCredentials.createInsecure(),
): Promise<EchoBackend> {
  const server = new grpc.Server();
  addEchoService(server, name, before);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${address}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    name,
    address,
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

/** Adds the Echo service answering as `name` to any server (e.g. an XdsServer). */
export function addEchoService(
  server: grpc.Server,
  name: string,
  before?: (message: string) => Promise<void>,
): void {
  server.addService(echoPackage().service, {
    Echo: (call: grpc.ServerUnaryCall<EchoRequest, EchoReply>, cb: grpc.sendUnaryData<EchoReply>) => {
      const reply = (): void => cb(null, { message: call.request.message, backend: name });
      if (before) void before(call.request.message).then(reply);
      else reply();
    },
  });
}

export function echoClientClass(): EchoClientCtor {
  return echoPackage().Client;
}

/** One unary call; resolves with the name of the backend that answered. */
export function callEcho(client: EchoClient, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    client.Echo({ message: 'hi' }, { deadline: Date.now() + timeoutMs }, (err, res) =>
      err ? reject(err) : resolve(res?.backend ?? ''),
    );
  });
}
