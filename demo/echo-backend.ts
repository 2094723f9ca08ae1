// gRPC Echo backends, for the demo (npm run demo) and the end-to-end tests: each answers with its
// own name, so a caller sees which backend a call reached. Two request metadata keys make a backend
// misbehave on purpose:
// `x-delay-ms: N` answers after N ms; `x-flaky: 1` fails every other such call (the 1st, 3rd, ...)
// with UNAVAILABLE, so retries can be seen.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** The source .proto (this module runs compiled, from dist/demo/). */
export const ECHO_PROTO = fileURLToPath(new URL('../../demo/echo.proto', import.meta.url));

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
  Echo(
    req: EchoRequest,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: EchoReply) => void,
  ): void;
}

function echoPackage(): { service: grpc.ServiceDefinition; Client: EchoClientCtor } {
  const def = protoLoader.loadSync(ECHO_PROTO, { keepCase: true, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    portolan: { echo: { Echo: EchoClientCtor & { service: grpc.ServiceDefinition } } };
  };
  const Echo = pkg.portolan.echo.Echo;
  return { service: Echo.service, Client: Echo };
}

export interface EchoBackend {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  /** Calls received, each retry attempt included. */
  calls(): number;
  /** Stops at once, as a crash would: open connections are cut. */
  stop(): Promise<void>;
  /** Stops as an application does on SIGTERM: GOAWAY first, then the connections close. */
  drain(): Promise<void>;
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
  const service = addEchoService(server, name, before);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${address}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    name,
    address,
    port: bound,
    calls: () => service.calls(),
    stop: () =>
      new Promise<void>((resolve) => {
        service.stop();
        server.forceShutdown();
        resolve();
      }),
    drain: () =>
      new Promise<void>((resolve) => {
        // Bounded: a connection that does not close within 5 s is cut.
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 5000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          service.stop();
          resolve();
        });
      }),
  };
}

/** The Echo service on a server: calls received, and `stop` cancels delayed answers. */
export interface EchoService {
  /** Calls received, each retry attempt included. */
  calls(): number;
  stop(): void;
}

/**
 * Adds the Echo service answering as `name` to any server (e.g. an XdsServer), with the
 * `x-delay-ms` and `x-flaky` behaviours and the `before` hook described above.
 */
export function addEchoService(
  server: grpc.Server,
  name: string,
  before?: (message: string) => Promise<void>,
): EchoService {
  let calls = 0;
  let flaky = 0;
  const timers = new Set<NodeJS.Timeout>();
  server.addService(echoPackage().service, {
    Echo: (call: grpc.ServerUnaryCall<EchoRequest, EchoReply>, cb: grpc.sendUnaryData<EchoReply>) => {
      calls += 1;
      if (call.metadata.get('x-flaky').length > 0 && ++flaky % 2 === 1) {
        cb({ code: grpc.status.UNAVAILABLE, details: `${name}: flaky` });
        return;
      }
      const answer = (): void => cb(null, { message: call.request.message, backend: name });
      const reply = (): void => {
        if (before) void before(call.request.message).then(answer);
        else answer();
      };
      const delay = Number(call.metadata.get('x-delay-ms')[0] ?? 0);
      if (!(delay > 0)) return reply();
      const timer = setTimeout(() => {
        timers.delete(timer);
        reply();
      }, delay);
      timers.add(timer);
    },
  });
  return {
    calls: () => calls,
    stop: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
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

/** One unary call with request metadata; resolves with the backend's name or the call's error. */
export function callEchoWith(
  client: EchoClient,
  metadata: Readonly<Record<string, string>>,
  timeoutMs = 5000,
): Promise<{ backend: string } | { error: grpc.ServiceError }> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    client.Echo({ message: 'hi' }, md, { deadline: Date.now() + timeoutMs }, (err, res) =>
      resolve(err ? { error: err } : { backend: res?.backend ?? '' }),
    );
  });
}
