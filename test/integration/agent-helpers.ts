// The pieces the agent tests run in process: a control plane with its CA on a secure port that can be
// stopped and started again on the same port (an outage), `portolan agent` assembled as the CLI
// assembles it (agent/agent.ts), and a raw SDS client on a Unix socket.
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { startAgent, type AgentConfig, type RunningAgent } from '../../agent/agent.js';
import type { AgentModule } from '../../agent/module.js';
import { CertificateAuthority } from '../../ca/authority.js';
import { workloadIdentity } from '../../ca/identity.js';
import { createJoinToken } from '../../ca/join-tokens.js';
import { SecurePort } from '../../ca/secure-server.js';
import { silentLogger, type Logger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { decodeAny } from '../../xds/proto/protos.js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../../xds/proto/wire.js';
import type { StreamView } from '../../xds/server/observer.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';

export const TRUST_DOMAIN = 'cluster.local';

export interface SecurePlane {
  readonly dir: string;
  readonly plane: InProcessPlane;
  readonly store: Store;
  readonly ca: CertificateAuthority;
  /** The secure port's address (the same across restarts). */
  readonly address: string;
  /** A file with the trust bundle, as `portolan ca root` writes it. */
  readonly rootFile: string;
  /** Streams the control plane opened, identified or not, and how they closed. */
  readonly opened: StreamView[];
  readonly closed: { stream: StreamView; reason: string }[];
  token(namespace: string, serviceAccount: string, uses?: number): { id: string; token: string };
  /** The control plane goes away (the secure port stops; ADS streams on it end). */
  stopSecurePort(): Promise<void>;
  /** It comes back, on the same address. */
  startSecurePort(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSecurePlane(): Promise<SecurePlane> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-agent-int-'));
  mkdirSync(join(dir, 'cp'));
  const store = Store.open({ dataDir: join(dir, 'cp'), logger: silentLogger });
  const opened: StreamView[] = [];
  const closed: { stream: StreamView; reason: string }[] = [];
  const plane = await startInProcessPlane({
    observers: [
      {
        streamOpened: (s) => opened.push(s),
        streamClosed: (stream, reason) => closed.push({ stream, reason }),
      },
    ],
  });
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: TRUST_DOMAIN });
  const rootFile = join(dir, 'root-cert.pem');
  writeFileSync(rootFile, ca.trustBundle());
  let port = 0;
  let securePort: SecurePort | undefined;
  const startSecurePort = async (): Promise<void> => {
    // The port of a stopped server may linger a moment; retry the bind briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        securePort = await SecurePort.start({
          ca,
          store: new SqliteSharedStore(store),
          services: [plane.ads],
          host: '127.0.0.1',
          port,
          serverSans: ['localhost', '127.0.0.1'],
          logger: silentLogger,
        });
        port = securePort.port;
        return;
      } catch (err) {
        if (attempt >= 20) throw err;
        await sleep(100);
      }
    }
  };
  await startSecurePort();
  return {
    dir,
    plane,
    store,
    ca,
    address: `127.0.0.1:${port}`,
    rootFile,
    opened,
    closed,
    token(namespace, serviceAccount, uses = 1) {
      const created = createJoinToken(
        store.joinTokens,
        workloadIdentity(TRUST_DOMAIN, namespace, serviceAccount),
        3600_000,
        uses,
      );
      return { id: created.id, token: created.token };
    },
    async stopSecurePort() {
      await securePort?.stop();
      securePort = undefined;
    },
    startSecurePort,
    async stop() {
      await securePort?.stop();
      await plane.stop();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestAgentOptions {
  readonly name: string;
  readonly namespace?: string;
  readonly serviceAccount?: string;
  readonly token?: string;
  readonly caAddress?: string;
  readonly xdsAddress?: string;
  readonly ttlSeconds?: number;
  /** The certificate's identity, when it must differ from the agent's (a misconfigured agent). */
  readonly certificateIdentity?: string;
  readonly fallbackMs?: number;
  readonly maxLocalStreams?: number;
  readonly logger?: Logger;
  readonly modules?: readonly AgentModule[];
  readonly cache?: { maxNodes: number; maxBytes: number };
}

export interface TestAgent extends RunningAgent {
  readonly dir: string;
  readonly certDir: string;
  readonly xdsAddress: string;
  readonly sdsSocket: string;
  readonly statusBase: string;
}

/** An agent with its directories under the plane's, on ephemeral loopback ports. */
export async function startTestAgent(cp: SecurePlane, o: TestAgentOptions): Promise<TestAgent> {
  const dir = join(cp.dir, o.name);
  const namespace = o.namespace ?? 'shop';
  const serviceAccount = o.serviceAccount ?? 'cart';
  const certDir = join(dir, 'certs');
  const sdsSocket = join(dir, 'sds.sock');
  const config: AgentConfig = {
    certificate: {
      caAddress: o.caAddress ?? cp.address,
      rootCertFile: cp.rootFile,
      outDir: certDir,
      identity: o.certificateIdentity ?? workloadIdentity(TRUST_DOMAIN, namespace, serviceAccount),
      logger: o.logger ?? silentLogger,
      ...(o.token && { token: o.token }),
      ...(o.ttlSeconds && { ttlSeconds: o.ttlSeconds }),
      backoff: { initialMs: 200, maxMs: 1000, jitter: 0 },
    },
    identity: { trustDomain: TRUST_DOMAIN, namespace, serviceAccount },
    xdsAddress: o.xdsAddress ?? cp.address,
    listenXds: '127.0.0.1:0',
    xdsSocket: join(dir, 'xds.sock'),
    sdsSocket,
    statusAddr: { host: '127.0.0.1', port: 0 },
    dataDir: join(dir, 'data'),
    cache: o.cache ?? { maxNodes: 64, maxBytes: 64 * 1024 * 1024 },
    maxLocalStreams: o.maxLocalStreams ?? 1024,
    fallbackMs: o.fallbackMs ?? 3000,
    upstreamBackoff: { initialMs: 100, maxMs: 1000, jitter: 0 },
    logger: o.logger ?? silentLogger,
  };
  const agent = await startAgent(config, o.modules ?? []);
  return {
    ...agent,
    dir,
    certDir,
    xdsAddress: agent.addresses.xds[0] ?? '',
    sdsSocket,
    statusBase: `http://${agent.addresses.status}`,
  };
}

export async function getText(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

/** A node as a gRPC client's bootstrap gives it, in protobufjs object form. */
export function clientNode(id: string, metadata: Record<string, string> = {}): object {
  return {
    id,
    cluster: 'test',
    user_agent_name: 'gRPC raw-agent-test',
    metadata: {
      fields: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, { stringValue: v }])),
    },
  };
}

const SDS_PATH = '/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets';
export const SECRET_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const identity = (b: Buffer): Buffer => b;

export interface Secret {
  readonly name: string;
  readonly certificateChain?: string;
  readonly privateKey?: string;
  readonly trustedCa?: string;
}

/** Envoy's side of SDS on the agent's Unix socket: one StreamSecrets stream, decoded secrets. */
export class RawSdsClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly queue: { nonce: string; versionInfo: string; secrets: Secret[] }[] = [];

  constructor(socket: string, names: string[]) {
    this.client = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
    this.call = this.client.makeBidiStreamRequest(SDS_PATH, identity, identity);
    this.call.on('data', (bytes: Buffer) => {
      const res = decodeDiscoveryResponse(bytes);
      this.queue.push({
        nonce: res.nonce,
        versionInfo: res.version_info,
        secrets: res.resources.map((r) => toSecret(decodeAny(r.type_url, r.value))),
      });
      // ACK, as Envoy does.
      this.call.write(
        encodeDiscoveryRequest({
          type_url: SECRET_TYPE,
          resource_names: names,
          version_info: res.version_info,
          response_nonce: res.nonce,
        }),
      );
    });
    this.call.on('error', () => {});
    this.call.write(
      encodeDiscoveryRequest({
        node: { id: 'envoy-sds', cluster: 'test', user_agent_name: 'envoy' },
        type_url: SECRET_TYPE,
        resource_names: names,
      }),
    );
  }

  /** The next response's secrets, waiting up to `timeoutMs`. */
  async next(timeoutMs = 10_000): Promise<Secret[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.queue.shift();
      if (r) return r.secrets;
      if (Date.now() > deadline) throw new Error(`no SDS response within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}

function toSecret(raw: Record<string, unknown>): Secret {
  const inline = (v: unknown): string | undefined => {
    const b = (v as { inline_bytes?: string } | undefined)?.inline_bytes;
    return b === undefined ? undefined : Buffer.from(b, 'base64').toString('utf8');
  };
  const tls = raw.tls_certificate as { certificate_chain?: unknown; private_key?: unknown } | undefined;
  const validation = raw.validation_context as { trusted_ca?: unknown } | undefined;
  const certificateChain = inline(tls?.certificate_chain);
  const privateKey = inline(tls?.private_key);
  const trustedCa = inline(validation?.trusted_ca);
  return {
    name: String(raw.name),
    ...(certificateChain && { certificateChain }),
    ...(privateKey && { privateKey }),
    ...(trustedCa && { trustedCa }),
  };
}
