// `portolan serve` flags for what one client may hold of the control plane (docs/security.md,
// "Limits"): request size, HTTP/2 and keepalive limits on both gRPC ports, names per subscription,
// streams per peer, and the first request's deadline; and their compiled form.
import type { Command } from 'commander';
import { OptionError, parseDurationMs, parsePositiveInt } from '../adapters/option-values.js';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from '../xds/server/stream-limits.js';
import { DEFAULT_TRANSPORT_LIMITS, type TransportLimits } from '../xds/server/transport-limits.js';

export interface LimitOptions {
  readonly stream: StreamLimits;
  readonly transport: TransportLimits;
}

const seconds = (ms: number): string => (ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`);

export const LIMIT_DEFAULTS = {
  maxRequestBytes: String(DEFAULT_TRANSPORT_LIMITS.maxReceiveMessageBytes),
  maxConcurrentStreams: String(DEFAULT_TRANSPORT_LIMITS.maxConcurrentStreams),
  maxConnectionIdle: seconds(DEFAULT_TRANSPORT_LIMITS.maxConnectionIdleMs),
  keepaliveTime: seconds(DEFAULT_TRANSPORT_LIMITS.keepaliveTimeMs),
  keepaliveTimeout: seconds(DEFAULT_TRANSPORT_LIMITS.keepaliveTimeoutMs),
  keepaliveMinPingInterval: seconds(DEFAULT_TRANSPORT_LIMITS.minPingIntervalMs),
  keepaliveMaxPingStrikes: String(DEFAULT_TRANSPORT_LIMITS.maxPingStrikes),
  maxNamesPerType: String(DEFAULT_STREAM_LIMITS.maxNamesPerType),
  maxStreamsPerPeer: String(DEFAULT_STREAM_LIMITS.maxStreamsPerPeer),
  firstRequestTimeout: seconds(DEFAULT_STREAM_LIMITS.firstRequestTimeoutMs),
} as const;

export function addLimitFlags(command: Command): void {
  command
    .option(
      '--max-request-bytes <n>',
      'largest request message accepted on both gRPC ports',
      LIMIT_DEFAULTS.maxRequestBytes,
    )
    .option(
      '--max-concurrent-streams <n>',
      'streams one HTTP/2 connection may have open at once, on both gRPC ports',
      LIMIT_DEFAULTS.maxConcurrentStreams,
    )
    .option(
      '--max-connection-idle <duration>',
      'close a connection that has had no open stream for this long',
      LIMIT_DEFAULTS.maxConnectionIdle,
    )
    .option(
      '--keepalive-time <duration>',
      'ping each connection this often to find peers that vanished',
      LIMIT_DEFAULTS.keepaliveTime,
    )
    .option(
      '--keepalive-timeout <duration>',
      'close a connection whose ping is not answered within this',
      LIMIT_DEFAULTS.keepaliveTimeout,
    )
    .option(
      '--keepalive-min-ping-interval <duration>',
      'client pings closer together than this are strikes',
      LIMIT_DEFAULTS.keepaliveMinPingInterval,
    )
    .option(
      '--keepalive-max-ping-strikes <n>',
      'close a connection (GOAWAY too_many_pings) after one more strike than this',
      LIMIT_DEFAULTS.keepaliveMaxPingStrikes,
    )
    .option(
      '--max-names-per-type <n>',
      'resource names one stream may subscribe to per type (more: the stream ends with INVALID_ARGUMENT)',
      LIMIT_DEFAULTS.maxNamesPerType,
    )
    .option(
      '--max-streams-per-peer <n>',
      'ADS streams per remote address (plaintext port) or per workload identity (secure port)',
      LIMIT_DEFAULTS.maxStreamsPerPeer,
    )
    .option(
      '--first-request-timeout <duration>',
      'end a stream that sends no request this long after it opened',
      LIMIT_DEFAULTS.firstRequestTimeout,
    );
}

/** The limits given on the command line; undefined when none of these flags is present (not from the CLI). */
export function compileLimitOptions(raw: Readonly<Record<string, unknown>>): LimitOptions | undefined {
  if (!Object.keys(LIMIT_DEFAULTS).some((k) => typeof raw[k] === 'string')) return undefined;
  const str = (key: keyof typeof LIMIT_DEFAULTS): string => {
    const v = raw[key];
    return typeof v === 'string' ? v : LIMIT_DEFAULTS[key];
  };
  const int = (key: keyof typeof LIMIT_DEFAULTS, flag: string): number => parsePositiveInt(str(key), flag);
  const ms = (key: keyof typeof LIMIT_DEFAULTS, flag: string): number => {
    const value = parseDurationMs(str(key), flag);
    if (value <= 0) throw new OptionError(`${flag}: must be longer than 0`);
    return value;
  };
  return {
    transport: {
      maxReceiveMessageBytes: int('maxRequestBytes', '--max-request-bytes'),
      maxConcurrentStreams: int('maxConcurrentStreams', '--max-concurrent-streams'),
      maxConnectionIdleMs: ms('maxConnectionIdle', '--max-connection-idle'),
      keepaliveTimeMs: ms('keepaliveTime', '--keepalive-time'),
      keepaliveTimeoutMs: ms('keepaliveTimeout', '--keepalive-timeout'),
      minPingIntervalMs: ms('keepaliveMinPingInterval', '--keepalive-min-ping-interval'),
      maxPingStrikes: int('keepaliveMaxPingStrikes', '--keepalive-max-ping-strikes'),
    },
    stream: {
      maxNamesPerType: int('maxNamesPerType', '--max-names-per-type'),
      maxStreamsPerPeer: int('maxStreamsPerPeer', '--max-streams-per-peer'),
      firstRequestTimeoutMs: ms('firstRequestTimeout', '--first-request-timeout'),
    },
  };
}
