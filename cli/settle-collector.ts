// One compacting full collection once the process has gone idle after its heap grew a lot, as after
// a reconnect storm: with the memory reducer off and the heap allowed to double before V8's next
// full collection (node-flags.ts), a storm's garbage — tens of MB promoted through the young
// generation — otherwise stays, and with it the pages it holds, until the heap doubles: the server's
// RSS per stream in steady state was about twice what it is after a collection (docs/benchmarks.md).
// Only after growth of GROWTH_MIB and a quarter of the live heap, and only when the event loop has
// been idle for IDLE_TICKS ticks in a row, so steady light work (an edit every few seconds, which
// promotes little) does not bring back the memory reducer's collections, and a storm is never
// interrupted by one.
//
// Only while streams are connected, or after LONELY_TICKS of idle time with none: a full collection
// with no stream alive frees the hidden classes of a stream's objects, and V8 then throws away the
// optimised code that was specialised on them ("weak objects" deoptimisations: 611 against 1 in a
// 2,000-stream storm), so the next storm ran in the interpreter while it compiled everything again
// (81 against 60 µs of server CPU per response). A server whose streams all went away keeps the
// storm's garbage until it has been idle that long.
//
// Compaction is asked for around this collection only (`--compact-on-every-full-gc`, set and reset
// with v8.setFlagsFromString): it empties the sparse pages a storm leaves, which V8's own heuristics
// mostly keep; the collections V8 starts itself, in a storm, stay as cheap as V8 makes them.
// Needs `--expose-gc` (node-flags.ts); without it, nothing happens.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

const TICK_MS = 500;
/**
 * Ticks in a row with the event loop at most IDLE_UTILIZATION busy: 2 s of 1 %. Steady churn (10
 * edits a second on 200 streams keeps the loop 3–10 % busy) is not idle: a compacting collection
 * of a 10,000-service heap in it cost several ms per change (bench churn-streams, 2.9× the
 * 1,000-service figure with 2 ticks of 5 %).
 */
export const IDLE_TICKS = 4;
const IDLE_UTILIZATION = 0.01;
export const GROWTH_MIB = 32;
/** Idle ticks (not necessarily in a row) with no stream connected after which it collects anyway: 5 min. */
export const LONELY_TICKS = (5 * 60 * 1000) / TICK_MS;

/** What one tick sees. */
export interface SettleSample {
  /** The event loop's utilisation since the last tick, 0–1. */
  readonly busy: number;
  /** Bytes of the heap in use now. */
  readonly heapUsed: number;
  /** Streams connected now: asked only when the rest says collect (counting them walks them). */
  readonly streams: () => number;
}

/** When to collect, from one sample a tick: no timers or V8 in it, so a test can drive it. */
export class SettlePolicy {
  /** The heap's lowest use since the last collection: about what a full collection leaves. */
  private live: number;
  private idleTicks = 0;
  /** Ticks that would have collected but for no stream being connected, since the last collection. */
  private lonelyTicks = 0;

  constructor(heapUsed: number) {
    this.live = heapUsed;
  }

  /** True when a collection should run now; the caller then reports the heap it left (collected). */
  tick(sample: SettleSample): boolean {
    this.idleTicks = sample.busy <= IDLE_UTILIZATION ? this.idleTicks + 1 : 0;
    this.live = Math.min(this.live, sample.heapUsed);
    if (this.idleTicks < IDLE_TICKS) return false;
    if (sample.heapUsed - this.live < Math.max(GROWTH_MIB * 2 ** 20, this.live / 4)) return false;
    if (sample.streams() > 0) return true;
    this.lonelyTicks += 1;
    return this.lonelyTicks >= LONELY_TICKS;
  }

  collected(heapUsed: number): void {
    this.live = heapUsed;
    this.idleTicks = 0;
    this.lonelyTicks = 0;
  }
}

type Collect = () => void;

export interface SettleCollector {
  stop(): void;
  /** Full collections it ran. */
  readonly collections: number;
}

export interface SettleInputs {
  /** Streams connected now (the ADS server's gauges). */
  readonly streams: () => number;
  /** The collection; by default a compacting gc() when node runs with --expose-gc. */
  readonly collect?: Collect | undefined;
}

export function startSettleCollector(inputs: SettleInputs): SettleCollector {
  const collect = 'collect' in inputs ? inputs.collect : compactingGc();
  let collections = 0;
  if (!collect) return { stop: () => undefined, collections };
  const used = (): number => getHeapStatistics().used_heap_size;
  const policy = new SettlePolicy(used());
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (!policy.tick({ busy, heapUsed: used(), streams: inputs.streams })) return;
    collect();
    collections += 1;
    policy.collected(used());
  }, TICK_MS).unref();
  return {
    stop: () => clearInterval(timer),
    get collections() {
      return collections;
    },
  };
}

function compactingGc(): Collect | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return undefined;
  return () => {
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
}
