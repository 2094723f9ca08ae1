// The secure port (`--secure-xds-addr`): one TLS gRPC server for the CA's signing API and for ADS.
// Client certificates are optional at the TLS layer (a VM's first contact has only a join token);
// ADS then requires one whose SPIFFE identity matches the namespace and service account the node
// claims. The server certificate is issued by our own CA and re-issued before it expires or when the
// roots change (`portolan ca rotate` from another process), without restarting the listener.
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../log/logger.js';
import type { JoinTokenTable } from '../store/join-tokens.js';
import type { CertificateAuthority } from './authority.js';
import { registerCertificateService } from './certificate-service.js';
import { controlPlaneIdentity, parseSpiffeUri } from './identity.js';
import { peerIdentity } from './peer-identity.js';
import { ReloadableCertificates } from './reloadable-certificates.js';

export interface SecurePortOptions {
  readonly ca: CertificateAuthority;
  readonly tokens: JoinTokenTable;
  /** The services served beside the CA's own (the ADS server), each given the node check. */
  readonly services: readonly SecureService[];
  readonly host: string;
  readonly port: number;
  /** SANs of the server certificate: DNS names and IP addresses, mixed (`--secure-xds-sans`). The control plane's SPIFFE ID is always added. */
  readonly serverSans: readonly string[];
  readonly logger: Logger;
  /** How often the server certificate and trust bundle are checked (default 30 s). */
  readonly refreshMs?: number;
  /** Lifetime of the server certificate (default: the CA's default TTL). */
  readonly serverCertTtlSeconds?: number;
  /** The gRPC server's limits (request size, HTTP/2, keepalive); the ADS server's, from cli/. */
  readonly serverOptions?: grpc.ServerOptions;
}

/** What a stream's first request says about its node: its id and metadata. */
export interface NodeClaim {
  readonly id: string;
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** Decides, from a stream's node and its call (the TLS peer), whether the stream may proceed: a refusal, or the peer's identity. */
export type NodeAuthorizer = (
  node: NodeClaim,
  call: grpc.ServerDuplexStream<Buffer, Buffer>,
) => { code: grpc.status; reason: string } | { identity: string } | undefined;

/** Who a stream's peer is, decided as the stream opens: its verified workload identity, or a refusal. */
export type PeerAuthenticator = (
  call: grpc.ServerDuplexStream<Buffer, Buffer>,
) => { readonly ok: true; readonly key: string } | { readonly ok: false; readonly reason: string };

/**
 * A gRPC service the secure port serves: a stream without a verified certificate is refused as it
 * opens (`authenticate`), and each stream's node is checked with `authorize`.
 */
export interface SecureService {
  register(server: grpc.Server, authorize: NodeAuthorizer, authenticate: PeerAuthenticator): void;
  /** The gRPC server options the service wants on its port. */
  readonly serverOptions?: grpc.ServerOptions;
}

/** Without options: requests up to 4 MiB, what gRPC clients accept by default. */
const DEFAULT_SERVER_OPTIONS: grpc.ServerOptions = { 'grpc.max_receive_message_length': 4 * 1024 * 1024 };

export class SecurePort {
  private timer: NodeJS.Timeout | undefined;
  private caVersion = '';
  private renewAt = 0;

  private constructor(
    readonly port: number,
    private readonly server: grpc.Server,
    private readonly certificates: ReloadableCertificates,
    private readonly options: SecurePortOptions,
  ) {}

  static async start(options: SecurePortOptions): Promise<SecurePort> {
    const certificates = new ReloadableCertificates();
    const server = new grpc.Server(options.serverOptions ?? DEFAULT_SERVER_OPTIONS);
    const trustDomain = options.ca.trustDomain;
    for (const service of options.services)
      service.register(server, adsAuthorizer(trustDomain), adsPeerAuthenticator(trustDomain));
    registerCertificateService(server, { ca: options.ca, tokens: options.tokens, logger: options.logger });
    // Provider first (TLS needs a certificate before bind), then bind.
    const pending = new SecurePort(0, server, certificates, options);
    await pending.refresh();
    // grpc-js names the first parameter the CA provider but uses it as the identity provider;
    // one object serving both sidesteps the mix-up.
    const credentials = grpc.experimental.createCertificateProviderServerCredentials(
      certificates,
      certificates,
      false,
    );
    const { host } = options;
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${options.port}`, credentials, (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const running = new SecurePort(port, server, certificates, options);
    running.caVersion = pending.caVersion;
    running.renewAt = pending.renewAt;
    running.timer = setInterval(() => {
      running
        .refresh()
        .catch((err: unknown) => options.logger.error({ err }, 'secure port: certificate refresh failed'));
    }, options.refreshMs ?? 30_000);
    running.timer.unref();
    return running;
  }

  /** Re-issues the server certificate when 80% of its life has passed or the roots changed (CA's clock). */
  async refresh(now = this.options.ca.now()): Promise<void> {
    const version = this.options.ca.version(now);
    if (version === this.caVersion && now.getTime() < this.renewAt) return;
    const { dnsNames, ips } = splitSans(this.options.serverSans);
    const uris = [controlPlaneIdentity(this.options.ca.trustDomain)];
    const issued = await this.options.ca.issueServerCertificate(
      dnsNames,
      ips,
      this.options.serverCertTtlSeconds,
      now,
      uris,
    );
    const lifetime = issued.notAfter.getTime() - now.getTime();
    this.renewAt = now.getTime() + lifetime * 0.8;
    this.caVersion = version;
    const bundle = this.options.ca
      .issuers(now)
      .map((c) => c.toString('pem'))
      .join('\n');
    this.certificates.update(bundle, issued.certChainPem, issued.keyPem);
    this.options.logger.info(
      { dnsNames, ips, uris, notAfter: issued.notAfter },
      'secure port certificate issued',
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 2000);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

export function splitSans(sans: readonly string[]): { dnsNames: string[]; ips: string[] } {
  return {
    dnsNames: sans.filter((s) => isIP(s) === 0),
    ips: sans.filter((s) => isIP(s) !== 0),
  };
}

/**
 * ADS on the secure port, as a stream opens: a verified workload certificate, or the stream is
 * refused before it costs anything; its identity is what the stream is counted under.
 */
export function adsPeerAuthenticator(trustDomain: string): PeerAuthenticator {
  return (call) => {
    const peer = peerIdentity(call, trustDomain);
    return peer.ok ? { ok: true, key: peer.identity } : { ok: false, reason: peer.reason };
  };
}

/** ADS on the secure port: a verified workload certificate naming the node's NAMESPACE and SERVICE_ACCOUNT. */
export function adsAuthorizer(trustDomain: string): NodeAuthorizer {
  return (proxy, call) => {
    const peer = peerIdentity(call, trustDomain);
    if (!peer.ok) return { code: grpc.status.UNAUTHENTICATED, reason: peer.reason };
    const id = parseSpiffeUri(peer.identity);
    const ns = proxy.metadata.NAMESPACE;
    const sa = proxy.metadata.SERVICE_ACCOUNT;
    if (!id || ns !== id.namespace || sa !== id.serviceAccount)
      return {
        code: grpc.status.PERMISSION_DENIED,
        reason: `node ${proxy.id} claims NAMESPACE=${String(ns)} SERVICE_ACCOUNT=${String(sa)} but its certificate is ${peer.identity}`,
      };
    return { identity: peer.identity };
  };
}
