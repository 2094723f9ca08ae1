// Envoy's SecretDiscoveryService on a Unix socket: the secrets `default` (the workload certificate
// chain and key) and `ROOTCA` (the trust bundle), Istio's names, pushed on every open stream as soon
// as the certificate is renewed or the bundle changes — Envoy swaps them without a restart. The
// socket is the only way in (mode 0660: the agent's user and group); nothing crosses the network.
// StreamSecrets (SotW), DeltaSecrets and FetchSecrets are served; the protocol rules are the ADS
// server's own (xds/protocol/sotw-state.ts, delta-state.ts).
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import type { HeldCertificate } from '../../ca/cert-dir.js';
import { listenGrpc, plaintextCredentials, stopGrpc } from '../../ca/grpc-listener.js';
import { CERT_SECRET, ROOT_SECRET } from '../../mesh/workload-certs.js';
import { encodeResource, versionOf, type EncodedResource } from '../../xds/proto/resource.js';
import { DeltaStreamState } from '../../xds/protocol/delta-state.js';
import { StreamState } from '../../xds/protocol/sotw-state.js';
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodeDeltaDiscoveryResponse,
  encodeDiscoveryResponse,
} from '../../xds/proto/wire.js';
import type { IdentitySource } from '../upstream/connection.js';

export const SECRET_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const SERVICE = '/envoy.service.secret.v3.SecretDiscoveryService/';

export interface SdsServerOptions {
  readonly source: IdentitySource;
  /** `unix:/path` (or `host:port` in tests). */
  readonly listen: string;
  readonly logger: Logger;
  /** Called with the number of responses pushed after a certificate change (metrics). */
  readonly onPush?: (responses: number) => void;
  /** Streams at once (default 256). */
  readonly maxStreams?: number;
  /** Checked as each call opens: a reason to refuse it (PERMISSION_DENIED); see XdsProxyOptions.admit. */
  readonly admit?: () => string | undefined;
}

type Call = grpc.ServerDuplexStream<Buffer, Buffer>;

interface SdsStream {
  /** Sends what changed since the last response (all subscribed secrets when `force`); returns how many responses. */
  push(secrets: ReadonlyMap<string, EncodedResource>, force: boolean): number;
}

const identity = (b: Buffer): Buffer => b;
const method = (name: string, stream: boolean): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `${SERVICE}${name}`,
  requestStream: stream,
  responseStream: stream,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

/** The two secrets for a workload certificate. */
export function secretsOf(cert: HeldCertificate): Map<string, EncodedResource> {
  return new Map([
    [
      CERT_SECRET,
      encodeResource(SECRET_TYPE, CERT_SECRET, {
        name: CERT_SECRET,
        tls_certificate: {
          certificate_chain: { inline_bytes: Buffer.from(cert.chainPem) },
          private_key: { inline_bytes: Buffer.from(cert.keyPem) },
        },
      }),
    ],
    [
      ROOT_SECRET,
      encodeResource(SECRET_TYPE, ROOT_SECRET, {
        name: ROOT_SECRET,
        validation_context: { trusted_ca: { inline_bytes: Buffer.from(cert.bundlePem) } },
      }),
    ],
  ]);
}

export class SdsServer {
  private readonly server: grpc.Server;
  private readonly streams = new Set<SdsStream>();
  private secrets = new Map<string, EncodedResource>();
  private stopSource: (() => void) | undefined;
  address = '';

  constructor(private readonly options: SdsServerOptions) {
    this.server = new grpc.Server({ 'grpc.max_receive_message_length': 1024 * 1024 });
    this.server.addService(
      {
        StreamSecrets: method('StreamSecrets', true),
        DeltaSecrets: method('DeltaSecrets', true),
        FetchSecrets: method('FetchSecrets', false),
      },
      {
        StreamSecrets: (call: Call) => this.serveSotw(call),
        DeltaSecrets: (call: Call) => this.serveDelta(call),
        FetchSecrets: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
          this.fetch(call, callback),
      },
    );
  }

  async start(): Promise<void> {
    const cert = this.options.source.current();
    if (cert) this.secrets = secretsOf(cert);
    this.stopSource = this.options.source.onChange((c) => this.update(c));
    this.address = await listenGrpc(this.server, this.options.listen, plaintextCredentials());
  }

  get streamCount(): number {
    return this.streams.size;
  }

  async stop(): Promise<void> {
    this.stopSource?.();
    await stopGrpc(this.server, 1000);
  }

  private update(cert: HeldCertificate): void {
    this.secrets = secretsOf(cert);
    let pushed = 0;
    for (const s of this.streams) pushed += s.push(this.secrets, false);
    if (pushed > 0) this.options.onPush?.(pushed);
  }

  private admit(call: Call): boolean {
    const denied = this.options.admit?.();
    if (denied) {
      call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: denied });
      return false;
    }
    const max = this.options.maxStreams ?? 256;
    if (this.streams.size < max) return true;
    call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: `at most ${max} SDS streams` });
    return false;
  }

  private serveSotw(call: Call): void {
    if (!this.admit(call)) return;
    const state = new StreamState();
    let nonce = 0;
    const stream: SdsStream = {
      push: (secrets, force) => {
        let pushed = 0;
        for (const typeUrl of state.watchedTypes()) {
          const sub = state.subscription(typeUrl);
          if (!sub) continue;
          const resources = pick(secrets, sub.names);
          if (resources.length === 0) continue;
          const version = versionOf(resources);
          if (!state.shouldSend(typeUrl, version, force)) continue;
          const n = `${++nonce}`;
          state.recordSent(typeUrl, {
            version,
            nonce: n,
            names: resources.map((r) => r.name),
            at: new Date().toISOString(),
          });
          call.write(encodeDiscoveryResponse({ versionInfo: version, resources, typeUrl, nonce: n }));
          pushed += 1;
        }
        return pushed;
      },
    };
    this.track(call, stream, (bytes) => {
      const req = decodeDiscoveryRequest(bytes);
      const outcome = state.onRequest({ ...req, typeUrl: req.typeUrl || SECRET_TYPE });
      if (outcome.action === 'nack')
        this.options.logger.warn({ error: req.errorDetail?.message }, 'Envoy rejected a secret (NACK)');
      if (outcome.action === 'initial' || (outcome.action !== 'ignore' && outcome.respond))
        stream.push(this.secrets, true);
    });
  }

  private serveDelta(call: Call): void {
    if (!this.admit(call)) return;
    const state = new DeltaStreamState();
    const sent = new Map<string, string>(); // name → version sent
    let nonce = 0;
    const stream: SdsStream = {
      push: (secrets, force) => {
        let pushed = 0;
        for (const typeUrl of state.watchedTypes()) {
          const t = state.type(typeUrl);
          if (!t) continue;
          const fresh = pick(secrets, t.names).filter((r) => force || sent.get(r.name) !== r.version);
          if (fresh.length === 0) continue;
          for (const r of fresh) sent.set(r.name, r.version);
          const n = `${++nonce}`;
          state.recordSent(typeUrl, n);
          call.write(
            encodeDeltaDiscoveryResponse({
              systemVersion: versionOf(fresh),
              resources: fresh,
              removed: [],
              typeUrl,
              nonce: n,
            }),
          );
          pushed += 1;
        }
        return pushed;
      },
    };
    this.track(call, stream, (bytes) => {
      const req = decodeDeltaDiscoveryRequest(bytes);
      const typeUrl = req.typeUrl || SECRET_TYPE;
      const outcome = state.onRequest({ ...req, typeUrl });
      for (const [name, version] of req.initialVersions) sent.set(name, version);
      if (outcome.action === 'nack')
        this.options.logger.warn({ error: req.errorDetail?.message }, 'Envoy rejected a secret (NACK)');
      if (outcome.changed.first || outcome.changed.added.length > 0) stream.push(this.secrets, false);
    });
  }

  private fetch(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>): void {
    const denied = this.options.admit?.();
    if (denied) {
      callback({ code: grpc.status.PERMISSION_DENIED, details: denied });
      return;
    }
    let names: readonly string[];
    try {
      names = decodeDiscoveryRequest(call.request).resourceNames;
    } catch (err) {
      callback({
        code: grpc.status.INVALID_ARGUMENT,
        details: `malformed DiscoveryRequest: ${(err as Error).message}`,
      });
      return;
    }
    const resources = pick(this.secrets, new Set(names));
    if (resources.length === 0) {
      callback({ code: grpc.status.UNAVAILABLE, details: 'no certificate yet, or no such secret' });
      return;
    }
    const version = versionOf(resources);
    callback(
      null,
      encodeDiscoveryResponse({ versionInfo: version, resources, typeUrl: SECRET_TYPE, nonce: '' }),
    );
  }

  /** Registers the stream and feeds it its requests; a malformed one ends that stream alone. */
  private track(call: Call, stream: SdsStream, onRequest: (bytes: Buffer) => void): void {
    this.streams.add(stream);
    const close = (): void => {
      this.streams.delete(stream);
    };
    call.on('data', (bytes: Buffer) => {
      try {
        onRequest(bytes);
      } catch (err) {
        close();
        call.emit('error', {
          code: grpc.status.INVALID_ARGUMENT,
          details: `malformed request: ${(err as Error).message}`,
        });
      }
    });
    call.on('end', () => {
      close();
      call.end();
    });
    call.on('cancelled', close);
    call.on('error', close);
  }
}

/** The subscribed secrets (both when none are named). */
function pick(secrets: ReadonlyMap<string, EncodedResource>, names: ReadonlySet<string>): EncodedResource[] {
  if (names.size === 0) return [...secrets.values()];
  return [...names].flatMap((n) => secrets.get(n) ?? []);
}
