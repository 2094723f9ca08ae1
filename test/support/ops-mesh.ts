// The operations test mesh: `portolan serve` as a child process (config directory + mock registry +
// the CA), two echo backends in two zones behind a weighted split, and one proxy in each state:
//   echo-client-1   the real @grpc/grpc-js-xds client, its calls landing (SYNCED on every type)
//   delta-client-1  a raw delta client of CDS that ACKs (SYNCED, delta)
//   web-sidecar     a raw Envoy sidecar that ACKs everything, EDS and RDS included (SYNCED)
//   nacker          a raw gRPC client that rejects its clusters (NACK)
//   silent          a raw gRPC client that never answers (STALE)
// plus (unless `ca: false`) a join token spent on a certificate and a spare one (the CA page). Used
// by the ops tests, the dashboard tests, the wait tests and `npm run screenshots`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { AckingAdsClient } from './acking-ads-client.js';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from './echo-backend.js';
import { eventually } from './eventually.js';
import { startPortolanProcess, type PortolanProcess } from './portolan-process.js';
import { grpcNode, RawAdsClient } from './raw-ads-client.js';
import { RawDeltaClient } from './raw-delta-client.js';
import { xdsEchoClient } from './xds-client.js';

export const ECHO_HOST = 'echo.mesh.internal';
export const NACK_MESSAGE =
  'cluster outbound|7070||cart.mock.internal: unsupported load balancing policy (test)';
const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

export interface OpsMesh {
  readonly dir: string;
  readonly dataDir: string;
  readonly portolan: PortolanProcess;
  /** host:port of the admin API (what --http-addr takes). */
  readonly httpAddr: string;
  readonly echoPort: number;
  readonly client: EchoClient;
  /** Closes the stream of one of the mesh's proxies (nacker, silent, delta-client-1, web-sidecar). */
  disconnect(name: 'nacker' | 'silent' | 'delta-client-1' | 'web-sidecar'): void;
  /** Opens the nacker's stream again (after `disconnect('nacker')`), NACKing its clusters as at start. */
  reconnectNacker(): Promise<void>;
  /** Runs the `portolan` CLI; resolves with its exit code and output. */
  cli(args: readonly string[]): { status: number | null; stdout: string; stderr: string };
  getJson<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

export function echoService(port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${ECHO_HOST}]
  ports: [{ number: ${port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  location: MESH_INTERNAL
  workloadSelector: { labels: { app: echo } }
`;
}

function workload(name: string, address: string, port: number, version: string, zone: string): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: ${name}, namespace: default, labels: { app: echo, version: ${version} } }
spec:
  address: ${address}
  ports: { grpc: ${port} }
  labels: { app: echo, version: ${version} }
  locality: us-east/${zone}
`;
}

const RULES = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${ECHO_HOST}
  trafficPolicy:
    connectionPool: { tcp: { maxConnections: 100 } }
  subsets:
    - { name: v1, labels: { version: v1 } }
    - { name: v2, labels: { version: v2 } }
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: echo-split, namespace: default }
spec:
  hosts: [${ECHO_HOST}]
  http:
    - route:
        - { destination: { host: ${ECHO_HOST}, subset: v1 }, weight: 80 }
        - { destination: { host: ${ECHO_HOST}, subset: v2 }, weight: 20 }
`;

const WEB = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: web, namespace: default }
spec:
  hosts: [web.mesh.internal]
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints:
    - { address: 127.0.0.3, labels: { app: web }, locality: us-east/us-east-1a }
`;

export interface OpsMeshOptions {
  /** Spend a join token on a certificate and keep a spare one (the CA page); default true. */
  readonly ca?: boolean;
}

export async function startOpsMesh({ ca = true }: OpsMeshOptions = {}): Promise<OpsMesh> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ops-'));
  const configDir = join(dir, 'config');
  const dataDir = join(dir, 'data');
  for (const d of ['services', 'workloads', 'traffic']) mkdirSync(join(configDir, d), { recursive: true });
  const backends: EchoBackend[] = [];
  const cleanups: (() => void | Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const c of cleanups.splice(0).reverse()) await c();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const first = await startEchoBackend('v1@127.0.0.1', '127.0.0.1');
    backends.push(first, await startEchoBackend('v2@127.0.0.2', '127.0.0.2', first.port));
    cleanups.push(async () => {
      await Promise.all(backends.map((b) => b.stop()));
    });
    const port = first.port;
    writeFileSync(join(configDir, 'services', 'echo.yaml'), echoService(port));
    writeFileSync(
      join(configDir, 'workloads', 'echo-1.yaml'),
      workload('echo-1', '127.0.0.1', port, 'v1', 'us-east-1a'),
    );
    writeFileSync(
      join(configDir, 'workloads', 'echo-2.yaml'),
      workload('echo-2', '127.0.0.2', port, 'v2', 'us-east-1b'),
    );
    writeFileSync(join(configDir, 'traffic', 'echo-rules.yaml'), RULES);
    const portolan = await startPortolanProcess([
      '--registries',
      'config,mock',
      '--config-dir',
      configDir,
      '--data-dir',
      dataDir,
      '--log-format',
      'json',
    ]);
    cleanups.push(async () => {
      await portolan.stop();
    });
    const httpAddr = portolan.httpBase.replace(/^http:\/\//, '');
    const getJson = async <T>(path: string): Promise<T> => {
      // fetch may reuse a keep-alive socket the server is closing just then: one retry for that.
      const res = await fetch(`${portolan.httpBase}${path}`).catch(() =>
        fetch(`${portolan.httpBase}${path}`),
      );
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const cli = (args: readonly string[]): { status: number | null; stdout: string; stderr: string } => {
      const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 30_000 });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    };

    // The mock registry: a service with an unhealthy endpoint, and web.mesh.internal, which the config
    // directory then defines too: the config (first in --registries) owns it and shadows the mock's.
    // (In this order only: the mock API refuses a hostname another registry already serves.)
    const put = async (path: string, method: string, body: unknown): Promise<void> => {
      const res = await fetch(`${portolan.httpBase}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    };
    await put('/mock/services/cart.mock.internal', 'PUT', {
      ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }],
    });
    await put('/mock/services/cart.mock.internal/endpoints', 'PUT', [
      { address: '127.0.0.7', locality: 'us-west/us-west-2a', labels: { version: 'v3' } },
      {
        address: '127.0.0.8',
        locality: 'us-west/us-west-2a',
        labels: { version: 'v3' },
        health: 'UNHEALTHY',
      },
    ]);

    await put('/mock/services/web.mesh.internal', 'PUT', {
      ports: [{ name: 'http', number: 8080, protocol: 'HTTP' }],
    });
    await put('/mock/services/web.mesh.internal/endpoints', 'PUT', [
      { address: '127.0.0.4', locality: 'us-east/us-east-1b' },
    ]);
    writeFileSync(join(configDir, 'services', 'web.yaml'), WEB);
    await eventually(
      async () => {
        const res = await fetch(`${portolan.httpBase}/debug/registryz`);
        return (await res.text()).includes('127.0.0.3');
      },
      { timeoutMs: 10_000, what: 'the config directory serving web.mesh.internal' },
    );

    // The real gRPC client, until its calls land.
    const client = xdsEchoClient(`xds:///${ECHO_HOST}:${port}`, portolan.xdsAddress, 'echo-client-1');
    cleanups.push(() => client.close());
    await eventually(() => callEcho(client, 2000), {
      timeoutMs: 20_000,
      what: 'a call of echo-client-1 landing',
    });

    const delta = new RawDeltaClient(portolan.xdsAddress);
    cleanups.push(() => delta.close());
    delta.send({ node: grpcNode('delta-client-1'), type_url: CLUSTER });
    delta.ack(await delta.next());

    const sidecar = new AckingAdsClient(portolan.xdsAddress, {
      id: 'sidecar~127.0.0.3~web-1.default~default.svc.cluster.local',
      cluster: 'web',
      user_agent_name: 'envoy',
      // A Struct on the wire: iptables interception gives it outbound listeners with routes (RDS).
      metadata: {
        fields: { NAMESPACE: { stringValue: 'default' }, INTERCEPTION_MODE: { stringValue: 'REDIRECT' } },
      },
      locality: { region: 'us-east', zone: 'us-east-1a' },
    });
    cleanups.push(() => sidecar.close());

    const openNacker = async (): Promise<RawAdsClient> => {
      const nacker = new RawAdsClient(portolan.xdsAddress);
      cleanups.push(() => nacker.close());
      nacker.send({ node: grpcNode('nacker'), type_url: CLUSTER });
      const rejected = await nacker.next();
      nacker.send({
        type_url: CLUSTER,
        version_info: '',
        response_nonce: rejected.nonce,
        error_detail: { code: 3, message: NACK_MESSAGE },
      });
      return nacker;
    };
    const nacker = await openNacker();

    const silent = new RawAdsClient(portolan.xdsAddress);
    cleanups.push(() => silent.close());
    silent.send({ node: grpcNode('silent'), type_url: CLUSTER });
    await silent.next();

    // The CA: a token spent on a certificate, and a spare one.
    if (ca) {
      const secure = portolan.logs.find((l) => l.msg === 'portolan serving')?.secureXdsAddress;
      const token = cli([
        'token',
        'create',
        '--namespace',
        'default',
        '--service-account',
        'echo',
        '--data-dir',
        dataDir,
      ]);
      cli([
        'token',
        'create',
        '--namespace',
        'default',
        '--service-account',
        'web',
        '--uses',
        '3',
        '--data-dir',
        dataDir,
      ]);
      const root = cli(['ca', 'root', '--data-dir', dataDir]);
      if (typeof secure === 'string' && token.status === 0 && root.status === 0) {
        writeFileSync(join(dir, 'root.pem'), root.stdout);
        cli([
          'cert',
          '--once',
          '--ca-addr',
          secure,
          '--root-cert',
          join(dir, 'root.pem'),
          '--token',
          token.stdout.trim(),
          '--out',
          join(dir, 'certs'),
          '--log-level',
          'warn',
        ]);
      }
    }

    const streams = { nacker, silent, 'delta-client-1': delta, 'web-sidecar': sidecar };
    const disconnect = (name: keyof typeof streams): void => streams[name].close();
    const reconnectNacker = async (): Promise<void> => {
      streams.nacker = await openNacker();
    };
    return {
      dir: configDir,
      dataDir,
      portolan,
      httpAddr,
      echoPort: port,
      client,
      disconnect,
      reconnectNacker,
      cli,
      getJson,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
