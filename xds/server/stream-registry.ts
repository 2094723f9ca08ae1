// The open streams of a server, SotW and delta alike, and the index of what each subscribes to:
// what the push fan-out, the debug views, config dumps and stream counts read.
import type { AdsApi, AdsStream } from './ads-stream.js';
import type { ChangeSet } from './resource-cache.js';
import { SubscriptionIndex } from './subscription-index.js';

export interface StreamCount {
  readonly api: AdsApi;
  /** The kind of client (grpc, envoy), or 'unknown' before its first request. */
  readonly kind: string;
  readonly count: number;
}

export class StreamRegistry {
  private readonly streams = new Map<string, AdsStream>();
  /** Streams keep their entries current as their subscriptions change. */
  readonly subscriptions = new SubscriptionIndex<AdsStream>();
  private counter = 0;

  /** A new stream id, `conn-N`. */
  nextId(): string {
    return `conn-${++this.counter}`;
  }

  add(stream: AdsStream): void {
    this.streams.set(stream.id, stream);
  }

  remove(stream: AdsStream): void {
    this.streams.delete(stream.id);
    this.subscriptions.remove(stream);
  }

  /** Every open stream, oldest first. */
  list(): readonly AdsStream[] {
    return [...this.streams.values()];
  }

  /** The oldest open stream of the proxy with this node id. */
  find(proxyId: string): AdsStream | undefined {
    for (const s of this.streams.values()) if (s.proxy?.id === proxyId) return s;
    return undefined;
  }

  /**
   * The streams `changes` may concern: all of them for a change to everything, or when views moved
   * (rare: what a view key reads changed; each stream knows its own holds).
   */
  affected(changes: ChangeSet): Iterable<AdsStream> {
    if (changes.all || changes.moved) return [...this.streams.values()];
    return this.subscriptions.affected(changes);
  }

  /** Streams open, by protocol variant and kind of client. */
  counts(): StreamCount[] {
    const counts = new Map<string, { api: AdsApi; kind: string; count: number }>();
    for (const s of this.streams.values()) {
      const kind = s.proxy?.kind ?? 'unknown';
      const key = `${s.api} ${kind}`;
      const c = counts.get(key);
      if (c) c.count += 1;
      else counts.set(key, { api: s.api, kind, count: 1 });
    }
    return [...counts.values()];
  }
}
