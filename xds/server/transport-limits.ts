// The connection-level limits of both gRPC ports (plaintext xDS and the secure port): request size,
// concurrent streams per connection, idle connections, server keepalive, and the policy for pings a
// client sends. The first four are grpc-js server options; grpc-js enforces no policy on client pings
// (C-core's min_recv_ping_interval_without_data / max_ping_strikes), so PingPolicy does, on each
// connection that carries an ADS stream. Each is a `portolan serve` flag (docs/security.md, "Limits").
import { constants as http2, type Http2Session } from 'node:http2';
import type { ServerOptions } from '@grpc/grpc-js';

export interface TransportLimits {
  /** Largest request message accepted; a larger one ends its stream with RESOURCE_EXHAUSTED. */
  readonly maxReceiveMessageBytes: number;
  /** Streams one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly maxConcurrentStreams: number;
  /** A connection with no open stream for this long is closed (GOAWAY). */
  readonly maxConnectionIdleMs: number;
  /** The server pings a connection this often and closes it when no answer comes in `keepaliveTimeoutMs`. */
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  /** Client pings closer together than this are strikes ... */
  readonly minPingIntervalMs: number;
  /** ... and one more than this many strikes closes the connection (GOAWAY ENHANCE_YOUR_CALM, "too_many_pings"). */
  readonly maxPingStrikes: number;
}

export const DEFAULT_TRANSPORT_LIMITS: TransportLimits = {
  // What gRPC clients accept by default; a real DiscoveryRequest is a few KiB (10,000 names ≈ 0.5 MiB).
  maxReceiveMessageBytes: 4 * 1024 * 1024,
  // Envoy and gRPC open one ADS stream per connection.
  maxConcurrentStreams: 100,
  maxConnectionIdleMs: 5 * 60_000,
  // Finds peers that vanished (a powered-off VM) and the one response buffered for them.
  keepaliveTimeMs: 5 * 60_000,
  keepaliveTimeoutMs: 20_000,
  // The Envoy bootstrap Portolan writes pings every 30 s (cli/bootstrap.ts).
  minPingIntervalMs: 10_000,
  maxPingStrikes: 2,
};

/** The grpc-js server options that apply `limits` (the ping policy is PingPolicy's). */
export function grpcServerOptions(limits: TransportLimits): ServerOptions {
  return {
    'grpc.max_receive_message_length': limits.maxReceiveMessageBytes,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreams,
    'grpc.max_connection_idle_ms': limits.maxConnectionIdleMs,
    'grpc.keepalive_time_ms': limits.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': limits.keepaliveTimeoutMs,
  };
}

/** Counts strikes for pings that come too fast on each watched connection, and closes abusers. */
export class PingPolicy {
  private readonly watched = new WeakSet<Http2Session>();

  constructor(
    private readonly limits: Pick<TransportLimits, 'minPingIntervalMs' | 'maxPingStrikes'>,
    private readonly onAbuse: (session: Http2Session) => void = () => {},
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Applies the policy to `session` (once per connection, however many streams it carries). */
  watch(session: Http2Session | undefined): void {
    if (!session || this.watched.has(session) || session.destroyed) return;
    this.watched.add(session);
    let last = -Infinity;
    let strikes = 0;
    const onPing = (): void => {
      const now = this.now();
      if (now - last < this.limits.minPingIntervalMs) strikes += 1;
      else strikes = 0;
      last = now;
      if (strikes <= this.limits.maxPingStrikes) return;
      session.off('ping', onPing);
      this.onAbuse(session);
      // The debug data is what gRPC clients look for to back off their keepalive; the close follows
      // once the GOAWAY had a moment to leave.
      if (!session.closed) session.goaway(http2.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from('too_many_pings'));
      setTimeout(() => session.destroy(), 500).unref();
    };
    session.on('ping', onPing);
  }
}
