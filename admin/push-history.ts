// Recent pushes and NACKs, as an observer of the ADS server (/debug/push_status and the dashboard):
// each push with what triggered it (registries, files, hostnames), how many proxies it touched, the
// responses it caused per type, how long it took and when it converged; plus per-interval buckets of
// push rate and convergence for a chart of the last minutes. Everything is bounded: a ring of the
// newest pushes and NACKs, and a fixed number of buckets.
import type * as Api from '../model/admin-api.js';
import type { NackRecord } from '../model/admin-api.js';
import { CLIENT_INPUT_LIMITS, truncated } from '../xds/server/client-input.js';
import type {
  AdsObserver,
  NackReceived,
  PushInfo,
  ResponseSent,
  StreamView,
} from '../xds/server/observer.js';

export type { NackRecord, PushStatusView } from '../model/admin-api.js';

/** Writable: the ring fills in a push's figures as it is handed out and converges. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** A push as the ring holds it; sent as the admin API's PushRecord. */
export type PushRecord = Writable<Api.PushRecord> & { readonly responses: Record<string, number> };

/** A chart interval as the ring counts into it; sent as the admin API's PushBucket. */
export type PushBucket = Writable<Api.PushBucket>;

export interface PushHistoryOptions {
  /** Pushes kept (default 100). */
  readonly pushes?: number;
  /** NACKs kept (default 100). */
  readonly nacks?: number;
  /** Width of one chart bucket (default 10 s). */
  readonly bucketMs?: number;
  /** Buckets kept (default 60: ten minutes of 10 s buckets). */
  readonly buckets?: number;
  readonly now?: () => number;
}

/** Pushes still converging that are followed; a stuck stream must not grow this. */
const MAX_OPEN = 64;

export class PushHistory implements AdsObserver {
  private readonly records: PushRecord[] = [];
  private readonly nackRecords: NackRecord[] = [];
  private readonly open = new Map<number, PushRecord>();
  private readonly bucketList: PushBucket[] = [];
  private readonly maxPushes: number;
  private readonly maxNacks: number;
  private readonly bucketMs: number;
  private readonly maxBuckets: number;
  private readonly now: () => number;

  constructor(options: PushHistoryOptions = {}) {
    this.maxPushes = options.pushes ?? 100;
    this.maxNacks = options.nacks ?? 100;
    this.bucketMs = options.bucketMs ?? 10_000;
    this.maxBuckets = options.buckets ?? 60;
    this.now = options.now ?? Date.now;
  }

  pushStarted(push: PushInfo): void {
    const record: PushRecord = {
      round: push.round,
      kind: push.kind,
      startedAt: new Date(this.now()).toISOString(),
      trigger: push.trigger,
      changesMerged: push.changesMerged,
      debounceMs: round2(push.debounceMs),
      pushMs: null,
      proxies: null,
      responses: {},
      convergenceMs: null,
      generation: push.generation ?? 0,
    };
    ring(this.records, record, this.maxPushes);
    this.open.set(push.round, record);
    if (this.open.size > MAX_OPEN) this.open.delete(this.open.keys().next().value ?? 0);
    this.bucket().pushes += 1;
  }

  pushHandedOut(push: PushInfo, pushMs: number, streams: number): void {
    const record = this.open.get(push.round);
    if (!record) return;
    record.pushMs = round2(pushMs);
    record.proxies = streams;
  }

  pushConverged(push: PushInfo, convergenceMs: number): void {
    const record = this.open.get(push.round);
    this.open.delete(push.round);
    if (record) record.convergenceMs = round2(convergenceMs);
    const bucket = this.bucket();
    bucket.converged += 1;
    bucket.convergenceSumMs += convergenceMs;
    bucket.convergenceMaxMs = Math.max(bucket.convergenceMaxMs, round2(convergenceMs));
  }

  responseSent(_stream: StreamView, response: ResponseSent): void {
    let newest: PushRecord | undefined;
    for (const r of this.open.values()) newest = r;
    if (newest) newest.responses[response.type] = (newest.responses[response.type] ?? 0) + 1;
  }

  nack(stream: StreamView, nack: NackReceived): void {
    ring(
      this.nackRecords,
      {
        at: new Date(this.now()).toISOString(),
        node: stream.proxy?.id ?? null,
        connection: stream.id,
        type: nack.type,
        // Bounded at receipt already (xds/server/client-input.ts); again here, as this ring is shown.
        nonce: truncated(nack.nonce, CLIENT_INPUT_LIMITS.nonceChars),
        code: nack.code,
        message: truncated(nack.message, CLIENT_INPUT_LIMITS.errorMessageChars),
        ...(nack.generation !== undefined && { generation: nack.generation }),
      },
      this.maxNacks,
    );
  }

  /** The newest pushes, newest first. */
  pushes(): readonly PushRecord[] {
    return [...this.records].reverse();
  }

  /** The newest NACKs, newest first. */
  nacks(): readonly NackRecord[] {
    return [...this.nackRecords].reverse();
  }

  /** Push rate and convergence per interval over the whole window, oldest first, ending now. */
  series(): { bucketSeconds: number; buckets: readonly PushBucket[] } {
    const current = Date.parse(this.bucket().at);
    const kept = new Map(this.bucketList.map((b) => [b.at, b]));
    const buckets: PushBucket[] = [];
    for (let i = this.maxBuckets - 1; i >= 0; i--) {
      const at = new Date(current - i * this.bucketMs).toISOString();
      const b = kept.get(at);
      buckets.push(b ? { ...b } : { at, pushes: 0, converged: 0, convergenceMaxMs: 0, convergenceSumMs: 0 });
    }
    return { bucketSeconds: this.bucketMs / 1000, buckets };
  }

  // The bucket of now, adding empty ones for the intervals that had nothing.
  private bucket(): PushBucket {
    const start = Math.floor(this.now() / this.bucketMs) * this.bucketMs;
    const last = this.bucketList[this.bucketList.length - 1];
    const lastStart = last ? Date.parse(last.at) : start - this.bucketMs;
    if (last && lastStart === start) return last;
    const from = Math.max(lastStart + this.bucketMs, start - (this.maxBuckets - 1) * this.bucketMs);
    let bucket: PushBucket | undefined;
    for (let at = from; at <= start; at += this.bucketMs) {
      bucket = {
        at: new Date(at).toISOString(),
        pushes: 0,
        converged: 0,
        convergenceMaxMs: 0,
        convergenceSumMs: 0,
      };
      ring(this.bucketList, bucket, this.maxBuckets);
    }
    return bucket ?? (this.bucketList[this.bucketList.length - 1] as PushBucket);
  }
}

function ring<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
}

function round2(ms: number): number {
  return Math.round(ms * 100) / 100;
}
