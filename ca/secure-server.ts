// The secure port (`--secure-xds-addr`): one TLS gRPC server for the CA's signing API and for ADS.
// Client certificates are optional at the TLS layer (a VM's first contact has only a join token);
// ADS then requires one whose SPIFFE identity matches the namespace and service account the node
// claims. The server certificate is issued by our own CA and re-issued before it expires or when the
// roots change (`portolan ca rotate` from another process), without restarting the listener. Every
// second it checks the deny list for a new revocation (written by `portolan token revoke` or `cert
// revoke` in another process, or on another replica: PostgreSQL also notifies at once) and closes
// the open streams that present a revoked certificate.
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../log/logger.js';
import type { CertificateAuthority } from './authority.js';
import type { CaStore } from './ca-store.js';
import { registerCertificateService } from './certificate-service.js';
import { DEFAULT_MAX_ENROLLMENT_AGE_SECONDS, Enrollments } from './enrollments.js';
import { listenGrpc, stopGrpc, tlsCredentials } from './grpc-listener.js';
import { controlPlaneIdentity, parseSpiffeUri } from './identity.js';
import { peerIdentity, type PeerIdentity } from './peer-identity.js';
import { KeyedRateLimiter, type RateLimit } from './rate-limit.js';
import { ReloadableCertificates } from './reloadable-certificates.js';
import { RevocationList } from './revocation.js';

/** CreateCertificate requests per peer address and per identity: bursts of 60, then one a second. */
export const DEFAULT_CA_RATE_LIMIT: RateLimit = { limit: 60, perMs: 60_000 };
const PRUNE_EVERY_MS = 3600_000;

export interface SecurePortOptions {
  readonly ca: CertificateAuthority;
  /** Join tokens, enrollments, the issuance log and the deny list (SQLite, or PostgreSQL shared by replicas). */
  readonly store: CaStore;
  /** Whether this replica runs the singleton jobs (pruning); default: always (one replica). */
  readonly leads?: () => boolean;
  /** How long a chain of renewals may run before the workload must enroll again (default 30 days). */
  readonly maxEnrollmentAgeSeconds?: number;
  /** CreateCertificate budget per peer address and per identity (default DEFAULT_CA_RATE_LIMIT; null: none). */
  readonly rateLimit?: RateLimit | null;
  /** How often the deny list is checked for a new revocation (default 1 s). */
  readonly revocationPollMs?: number;
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
  /**
   * Ends the open streams whose call `select` picks, with `code` and `reason`; returns how many. The
   * secure port calls it when a revocation reaches certificates that streams are open with.
   */
  closeStreams?(
    select: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => boolean,
    code: grpc.status,
    reason: string,
  ): number;
}

/** Without options: requests up to 4 MiB, what gRPC clients accept by default. */
const DEFAULT_SERVER_OPTIONS: grpc.ServerOptions = { 'grpc.max_receive_message_length': 4 * 1024 * 1024 };

export class SecurePort {
  private timers: NodeJS.Timeout[] = [];
  private caVersion = '';
  private renewAt = 0;
  private unwatch: () => void = () => undefined;

  private constructor(
    readonly port: number,
    private readonly server: grpc.Server,
    private readonly certificates: ReloadableCertificates,
    private readonly options: SecurePortOptions,
    private readonly access: SecureAccess,
  ) {}

  static async start(options: SecurePortOptions): Promise<SecurePort> {
    const certificates = new ReloadableCertificates();
    const server = new grpc.Server(options.serverOptions ?? DEFAULT_SERVER_OPTIONS);
    const access = new SecureAccess(options);
    const authenticate = adsPeerAuthenticator(options.ca.trustDomain);
    for (const service of options.services) service.register(server, access.authorizer(), authenticate);
    const rate = options.rateLimit === undefined ? DEFAULT_CA_RATE_LIMIT : options.rateLimit;
    registerCertificateService(server, {
      ca: options.ca,
      tokens: options.store,
      enrollments: access.enrollments,
      revocations: access.revocations,
      ...(rate && {
        rateLimits: { peer: new KeyedRateLimiter(rate), identity: new KeyedRateLimiter(rate) },
      }),
      logger: options.logger,
    });
    // Provider first (TLS needs a certificate before bind), then bind.
    await access.revocations.refresh(); // the deny list before the first stream
    const pending = new SecurePort(0, server, certificates, options, access);
    await pending.refresh();
    const { host } = options;
    const bound = await listenGrpc(
      server,
      `${host.includes(':') ? `[${host}]` : host}:${options.port}`,
      tlsCredentials(certificates),
    );
    const port = Number(bound.slice(bound.lastIndexOf(':') + 1));
    const running = new SecurePort(port, server, certificates, options, access);
    running.caVersion = pending.caVersion;
    running.renewAt = pending.renewAt;
    const every = (ms: number, fn: () => void): void => {
      const timer = setInterval(fn, ms);
      timer.unref();
      running.timers.push(timer);
    };
    every(options.refreshMs ?? 30_000, () => {
      running
        .refresh()
        .catch((err: unknown) => options.logger.error({ err }, 'secure port: certificate refresh failed'));
    });
    const sweep = (): void => {
      access
        .sweep()
        .catch((err: unknown) => options.logger.error({ err }, 'secure port: revocation sweep failed'));
    };
    running.unwatch = options.store.watchRevocations(sweep, options.revocationPollMs ?? 1000);
    const prune = (): void => {
      if (options.leads && !options.leads()) return;
      access.prune().catch((err: unknown) => options.logger.warn({ err }, 'secure port: pruning failed'));
    };
    every(PRUNE_EVERY_MS, prune);
    prune();
    return running;
  }

  /** Re-issues the server certificate when 80% of its life has passed or the roots changed (CA's clock). */
  async refresh(now = this.options.ca.now()): Promise<void> {
    // Another replica's (or `ca rotate`'s) rotation; unreachable: the roots as last read.
    await this.options.ca
      .reloadRoots()
      .catch((err: unknown) => this.options.logger.warn({ err }, 'secure port: CA roots not reloaded'));
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

  /** Applies a new revocation now instead of at the next poll; returns the streams it closed. */
  checkRevocations(): Promise<number> {
    return this.access.sweep();
  }

  async stop(): Promise<void> {
    this.unwatch();
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await stopGrpc(this.server, 2000);
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

/**
 * Who may do what on the secure port: enrollments and the deny list, the ADS authorizer, and the
 * sweep that closes the streams of certificates revoked while they were open.
 */
class SecureAccess {
  readonly enrollments: Enrollments;
  readonly revocations: RevocationList;
  /** Each secure stream's peer, read once from its certificate. */
  private readonly peers = new WeakMap<object, PeerIdentity>();

  constructor(private readonly options: SecurePortOptions) {
    this.enrollments = new Enrollments(
      options.store,
      options.maxEnrollmentAgeSeconds ?? DEFAULT_MAX_ENROLLMENT_AGE_SECONDS,
    );
    this.revocations = new RevocationList(options.store, () => options.ca.now());
  }

  authorizer(): NodeAuthorizer {
    return adsAuthorizer(this.options.ca.trustDomain, (call) => this.peer(call), this.revocations);
  }

  /** Reloads the deny list if it changed, and closes the streams it now refuses; returns how many. */
  async sweep(): Promise<number> {
    if (!(await this.revocations.refresh())) return 0;
    let closed = 0;
    for (const service of this.options.services) {
      closed +=
        service.closeStreams?.(
          (call) => {
            const peer = this.peer(call);
            return peer.ok && this.revocations.isRevoked(peer.serial);
          },
          grpc.status.UNAUTHENTICATED,
          'the client certificate has been revoked',
        ) ?? 0;
    }
    this.options.logger.info(
      { deniedSerials: this.revocations.size, closedStreams: closed },
      'deny list reloaded',
    );
    return closed;
  }

  /** Forgets enrollments that ended and revocations that can no longer match a valid certificate. */
  async prune(now = this.options.ca.now()): Promise<void> {
    const { enrollments, revocations } = await this.options.store.prune(
      now,
      this.enrollments.pruneCutoff(now),
    );
    if (enrollments + revocations > 0)
      this.options.logger.info({ enrollments, revocations }, 'pruned ended enrollments and revocations');
  }

  private peer(call: grpc.ServerDuplexStream<Buffer, Buffer>): PeerIdentity {
    let peer = this.peers.get(call);
    if (!peer) this.peers.set(call, (peer = peerIdentity(call, this.options.ca.trustDomain)));
    return peer;
  }
}

/**
 * ADS on the secure port: a verified workload certificate, not revoked, naming the node's
 * NAMESPACE and SERVICE_ACCOUNT.
 */
export function adsAuthorizer(
  trustDomain: string,
  peerOf: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => PeerIdentity = (call) =>
    peerIdentity(call, trustDomain),
  revocations?: RevocationList,
): NodeAuthorizer {
  return (proxy, call) => {
    const peer = peerOf(call);
    if (!peer.ok) return { code: grpc.status.UNAUTHENTICATED, reason: peer.reason };
    const revoked = revocations?.reason(peer.serial);
    if (revoked !== undefined)
      return {
        code: grpc.status.UNAUTHENTICATED,
        reason: `certificate ${peer.serial} has been revoked: ${revoked}`,
      };
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
