// Values derived from one serving view (a catalog and a mesh config) that many proxies share, such
// as the listener set of a sidecar view: built on first use and dropped with the view. A new
// catalog or config is a new view with an empty memo, so nothing kept here can be stale. A value is
// built on a context recording into a ReadSet of its own, which it keeps; each use adds it to the
// using build's reads, so a resource built from a shared value depends on what that value read.
import type { GenerateContext } from './generator.js';
import { recordingContext } from './recording-context.js';
import { ReadSet } from './reads.js';

/** One kind of memoized value; the type parameter ties the slot to what it holds. */
export interface MemoSlot<T> {
  readonly name: string;
  /** Never set: carries T. */
  readonly value?: T;
}

export function memoSlot<T>(name: string): MemoSlot<T> {
  return { name };
}

interface Memoized {
  readonly value: unknown;
  readonly reads: ReadSet;
}

export class ViewMemo {
  private readonly slots = new Map<MemoSlot<unknown>, Map<string, Memoized>>();

  /**
   * The value of `slot` for `key`, built by `build` the first time, from the context it is given
   * (not the caller's: what it reads is the value's, and every use replays it into `ctx.reads`).
   */
  get<T>(slot: MemoSlot<T>, key: string, ctx: GenerateContext, build: (ctx: GenerateContext) => T): T {
    let values = this.slots.get(slot);
    if (!values) this.slots.set(slot, (values = new Map<string, Memoized>()));
    let memoized = values.get(key);
    if (!memoized) {
      const reads = new ReadSet();
      memoized = { value: build(recordingContext(ctx, reads)), reads };
      values.set(key, memoized);
    }
    ctx.reads?.add(memoized.reads);
    return memoized.value as T;
  }
}
