// One full collection once the process has gone idle after its heap grew a lot, as after a
// reconnect storm: with the memory reducer off and the heap allowed to double before V8's next full
// collection (node-flags.ts), a storm's garbage — tens of MB promoted through the young generation —
// otherwise stays, and with it the pages it holds, until the heap doubles: the server's RSS per
// stream in steady state was about twice what it is after a collection (docs/benchmarks.md). Only
// after growth of GROWTH_MIB and a quarter of the live heap, and only when the event loop has been
// idle for IDLE_TICKS ticks in a row, so steady light work (an edit every few seconds, which
// promotes little) does not bring back the memory reducer's collections, and a storm is never
// interrupted by one. Needs `--expose-gc` (node-flags.ts); without it, nothing happens.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

const TICK_MS = 500;
/**
 * Ticks in a row with the event loop at most IDLE_UTILIZATION busy: 2 s of 1 %. Steady churn (10
 * edits a second on 200 streams keeps the loop 3–10 % busy) is not idle: a compacting collection
 * of a 10,000-service heap in it cost several ms per change (bench churn-streams, 2.9× the
 * 1,000-service figure with 2 ticks of 5 %).
 */
const IDLE_TICKS = 4;
const IDLE_UTILIZATION = 0.01;
const GROWTH_MIB = 32;

type Collect = () => void;

export interface SettleCollector {
  stop(): void;
  /** Full collections it ran. */
  readonly collections: number;
}

export function startSettleCollector(collect: Collect | undefined = exposedGc()): SettleCollector {
  let collections = 0;
  if (!collect) return { stop: () => undefined, collections };
  const used = (): number => getHeapStatistics().used_heap_size;
  /** The heap's lowest use since the last collection: about what a full collection leaves. */
  let live = used();
  let idleTicks = 0;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    idleTicks = busy <= IDLE_UTILIZATION ? idleTicks + 1 : 0;
    const heap = used();
    live = Math.min(live, heap);
    if (idleTicks < IDLE_TICKS || heap - live < Math.max(GROWTH_MIB * 2 ** 20, live / 4)) return;
    collect();
    collections += 1;
    live = used();
    idleTicks = 0;
  }, TICK_MS).unref();
  return {
    stop: () => clearInterval(timer),
    get collections() {
      return collections;
    },
  };
}

function exposedGc(): Collect | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  return typeof gc === 'function' ? () => gc() : undefined;
}
