// The agent's connection to the control plane's secure port: mTLS with the workload certificate,
// the server checked to be the control plane (ca/control-plane-check.ts), the streams of the local
// clients multiplexed on it. It is also the connection other agent modules send on (`openStream`).
// The control plane allows 100 concurrent streams per HTTP/2 connection; a stream beyond that would
// wait (and a local client with it, until it is served from the cache), so each connection carries
// at most `streamsPerConnection` (90) and another connection (a grpc-js channel of its own) is
// opened when they are taken: the agent's own stream and a new client never wait for a slot.
//
// Its state drives the xDS proxy: `up` once the control plane answers, `down` after a stream failed
// for a reason a retry may fix (the control plane went away, or refuses streams while it starts).
// While down, streams wait for the next retry, spaced by model/backoff.ts; the channel coming back
// (grpc-js reconnects on its own, with the same bounds) retries at once. A renewed certificate makes
// a new channel: streams move to it (`onRotate`), since the server checks the peer certificate only
// when a stream starts and the old one will expire.
//
// Replicas (docs/ha.md): the address may list several, comma-separated. When a retry comes and the
// channel to the current one is not ready, the connection moves to the next entry (a new channel;
// streams reopen there and replay their subscriptions). A DNS name with several records is one entry:
// gRPC's resolver and pick_first policy already try each record.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import { Backoff, type BackoffOptions } from '../../model/backoff.js';
import { controlPlaneAddresses } from '../../ca/control-plane-addresses.js';
import { controlPlaneCheck, type ControlPlaneCheck } from '../../ca/control-plane-check.js';
import { explainConnectionError } from '../../ca/connection-errors.js';
import type { HeldCertificate } from '../../ca/cert-dir.js';

export type UpstreamState = 'connecting' | 'up' | 'down';

/** Where the workload certificate comes from (the CertificateKeeper). */
export interface IdentitySource {
  current(): HeldCertificate | undefined;
  onChange(listener: (cert: HeldCertificate) => void): () => void;
}

export interface UpstreamOptions {
  /** The control plane's secure port, HOST:PORT, or several comma-separated (replicas). */
  readonly address: string;
  readonly trustDomain: string;
  readonly identity: IdentitySource;
  readonly logger: Logger;
  /** Between retries while the control plane is unreachable (default 0.5 s doubling to 15 s, jittered). */
  readonly backoff?: BackoffOptions;
  /** The largest response accepted from the control plane (default 128 MiB). */
  readonly maxResponseBytes?: number;
  /** Streams on one connection before another is opened (default 90, below the server's 100). */
  readonly streamsPerConnection?: number;
}

/** One HTTP/2 connection (a grpc-js channel) and the streams open on it. */
interface PooledChannel {
  readonly client: grpc.Client;
  streams: number;
}

/** Connections at most; beyond, streams share the least loaded (the local stream bounds keep far below). */
const MAX_CONNECTIONS = 16;

export interface UpstreamError {
  readonly code?: grpc.status;
  readonly message: string;
  readonly at: Date;
}

// Capped at 5 s: after a control-plane restart the fleet is back within seconds, not the tens of
// seconds a longer cap gives after a long outage. The cost while it is down is one failed TLS
// connect per agent per ~5 s; the server's --push-new-streams-per-second absorbs the reconnect wave.
const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 5_000, jitter: 0.5 };
const identity = (b: Buffer): Buffer => b;

export class UpstreamConnection {
  private client: grpc.Client | undefined;
  /** The channels streams go on: the first is `client`, the others opened as streams need them. */
  private pool: PooledChannel[] = [];
  private check: ControlPlaneCheck | undefined;
  private stateValue: UpstreamState = 'connecting';
  private channelReady = false;
  private error: UpstreamError | undefined;
  private readonly backoff: Backoff;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly rotateListeners = new Set<() => void>();
  private readonly stateListeners = new Set<(state: UpstreamState) => void>();
  private stopIdentity: (() => void) | undefined;
  private stopped = false;
  private outageLogged = false;
  private everUp = false;
  private readonly targets: readonly string[];
  private targetIndex = 0;
  /** Times the control plane answered again after being unreachable. */
  reconnects = 0;

  constructor(private readonly options: UpstreamOptions) {
    this.backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF);
    this.targets = controlPlaneAddresses(options.address);
    if (this.targets.length === 0) throw new Error(`no control plane address in "${options.address}"`);
  }

  /** Connects with the current certificate (or waits for the first), and follows renewals. */
  start(): void {
    this.stopIdentity = this.options.identity.onChange(() => this.rotate());
    if (this.options.identity.current()) this.rotate();
    // Streams wait (openStream gives none) until the first certificate makes a channel.
    else this.error = { message: 'waiting for the workload certificate', at: new Date() };
  }

  get state(): UpstreamState {
    return this.stateValue;
  }

  /** The entry of the address list the connection uses now. */
  get address(): string {
    return this.targets[this.targetIndex] ?? this.options.address;
  }

  /** Whether the control plane is reachable and answering now. */
  connected(): boolean {
    return this.channelReady && this.stateValue === 'up';
  }

  lastError(): UpstreamError | undefined {
    return this.error;
  }

  /**
   * A new bidirectional stream on the connection (raw bytes both ways), or undefined while the
   * connection is down or has no certificate: wait with `whenRetry`.
   */
  openStream(
    path: string,
    metadata = new grpc.Metadata(),
  ): grpc.ClientDuplexStream<Buffer, Buffer> | undefined {
    if (!this.client || this.stateValue === 'down' || this.stopped) return undefined;
    const channel = this.channelForStream();
    channel.streams += 1;
    const call = channel.client.makeBidiStreamRequest(path, identity, identity, metadata);
    let released = false;
    // grpc-js ends every call with a status, cancelled ones too.
    call.on('status', () => {
      if (released) return;
      released = true;
      channel.streams -= 1;
    });
    return call;
  }

  /** Upstream connections open now (for tests and /metrics). */
  get connections(): number {
    return this.pool.length;
  }

  /** A channel with a free stream slot, opening another connection when every one is taken. */
  private channelForStream(): PooledChannel {
    const limit = this.options.streamsPerConnection ?? 90;
    const free = this.pool.find((c) => c.streams < limit);
    if (free) return free;
    const cert = this.options.identity.current();
    if (this.pool.length >= MAX_CONNECTIONS || !cert || !this.check) {
      let least = this.pool[0] as PooledChannel;
      for (const c of this.pool) if (c.streams < least.streams) least = c;
      return least;
    }
    const channel: PooledChannel = { client: this.makeClient(cert, this.check, true), streams: 0 };
    this.pool.push(channel);
    this.options.logger.info(
      { address: this.address, connections: this.pool.length, streamsPerConnection: limit },
      'another connection to the control plane (the others carry their most streams)',
    );
    return channel;
  }

  /** A stream got an answer: the control plane is serving. */
  reportSuccess(): void {
    this.backoff.reset();
    this.setState('up');
  }

  /** A stream failed in a way a retry may fix: the connection is down until the next retry. */
  reportFailure(status: Partial<grpc.StatusObject>): void {
    this.fail({
      ...(status.code !== undefined && { code: status.code }),
      message:
        this.check?.lastFailure()?.message ??
        explainConnectionError(status.details ?? 'stream failed', this.address, '--ca-addr/--xds-addr'),
      at: new Date(),
    });
  }

  /** Runs `retry` at the next retry (once); returns the cancel function. */
  whenRetry(retry: () => void): () => void {
    this.waiters.add(retry);
    return () => this.waiters.delete(retry);
  }

  /** Calls `listener` when streams must move to a new channel (a renewed certificate). */
  onRotate(listener: () => void): () => void {
    this.rotateListeners.add(listener);
    return () => this.rotateListeners.delete(listener);
  }

  onStateChange(listener: (state: UpstreamState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  stop(): void {
    this.stopped = true;
    this.stopIdentity?.();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.waiters.clear();
    for (const c of this.pool) c.client.close();
    this.pool = [];
    this.client = undefined;
  }

  private fail(error: UpstreamError): void {
    this.error = error;
    if (this.stateValue === 'down' || this.stopped) return;
    this.setState('down');
    const delay = this.backoff.next();
    // Once per outage at warn; each retry after that at debug.
    this.options.logger[this.outageLogged ? 'debug' : 'warn'](
      { address: this.address, code: error.code, reason: error.message, retryInMs: delay },
      'control plane unreachable',
    );
    this.outageLogged = true;
    this.retryTimer = setTimeout(() => {
      // Still not through to this replica after the backoff: try the next (the waiters open there).
      if (!this.channelReady && this.targets.length > 1 && !this.stopped) this.failover();
      this.retry();
    }, delay);
  }

  /** Lets every waiting stream try again. */
  private retry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.stopped || !this.client) return;
    if (this.stateValue === 'down') this.setState('connecting');
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const w of waiting) w();
    // Nothing to retry: the channel being ready is the news.
    if (waiting.length === 0 && this.channelReady) this.setState('up');
  }

  private setState(state: UpstreamState): void {
    if (state === this.stateValue) return;
    // A reconnect is coming back after having been connected; the first connection is not one.
    if (state === 'up' && this.everUp && this.error) this.reconnects += 1;
    if (state === 'up') this.everUp = true;
    if (state === 'up') {
      this.error = undefined;
      this.outageLogged = false;
    }
    this.stateValue = state;
    if (state === 'up') this.options.logger.info({ address: this.address }, 'control plane connected');
    for (const l of this.stateListeners) l(state);
  }

  private failover(): void {
    const from = this.address;
    this.targetIndex = (this.targetIndex + 1) % this.targets.length;
    this.options.logger.info({ from, to: this.address }, 'trying the next control plane replica');
    this.rotate();
  }

  /** A channel with the current certificate; streams on the old one move over. */
  private rotate(): void {
    const cert = this.options.identity.current();
    if (!cert || this.stopped) return;
    const old = this.pool;
    const check = controlPlaneCheck(this.address, this.options.trustDomain);
    const client = this.makeClient(cert, check, false);
    this.client = client;
    this.pool = [{ client, streams: 0 }];
    this.check = check;
    this.channelReady = false;
    this.watch(client);
    if (old.length > 0) {
      for (const l of [...this.rotateListeners]) l();
      for (const c of old) c.client.close();
    } else {
      this.retry(); // the streams that waited for a certificate
    }
  }

  /** A channel to the current address; `own`: on a connection of its own (not grpc-js's shared one). */
  private makeClient(cert: HeldCertificate, check: ControlPlaneCheck, own: boolean): grpc.Client {
    const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
    return new grpc.Client(
      this.address,
      grpc.credentials.createSsl(
        Buffer.from(cert.bundlePem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.chainPem),
        { checkServerIdentity: check.checkServerIdentity },
      ),
      {
        ...check.channelOptions,
        'grpc.max_receive_message_length': this.options.maxResponseBytes ?? 128 * 1024 * 1024,
        'grpc.initial_reconnect_backoff_ms': backoff.initialMs,
        'grpc.max_reconnect_backoff_ms': backoff.maxMs,
        // As the Envoy bootstrap: a dead connection is noticed within ~40 s even when nothing moves.
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
        // Never idle: the connection is what tells the agent the control plane is there.
        'grpc.client_idle_timeout_ms': 2 ** 31 - 1,
        ...(own && { 'grpc.use_local_subchannel_pool': 1 }),
      },
    );
  }

  /** Follows the channel's state: a failure marks the connection down, readiness retries at once. */
  private watch(client: grpc.Client): void {
    const channel = client.getChannel();
    const step = (): void => {
      if (this.client !== client || this.stopped) return;
      // true: (re)connect when idle, so the state means something with no stream open.
      const state = channel.getConnectivityState(true);
      this.channelReady = state === grpc.connectivityState.READY;
      if (state === grpc.connectivityState.TRANSIENT_FAILURE)
        this.fail({
          message: this.check?.lastFailure()?.message ?? `cannot connect to ${this.address}`,
          at: new Date(),
        });
      else if (this.channelReady && this.stateValue !== 'up') this.retry();
      channel.watchConnectivityState(state, Infinity, () => step());
    };
    step();
  }
}
