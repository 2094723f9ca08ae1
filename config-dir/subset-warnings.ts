// The unknown-subset warnings (validate/unknown-subsets.ts) kept from traffic edit to traffic edit:
// which `host|subset` keys the DestinationRules define (counted, so a removal is exact), which
// VirtualServices name each key, and the warnings of each VirtualService that has some. A step the
// lists record (mesh-lists.ts listStep: what each list lost and gained) is applied to that state:
// only the VirtualServices touched, or naming a key whose definedness flipped, are checked again,
// and an edit that changes no warning answers with the very list it answered before. Lists not
// made from the ones it holds (a full merge, the first call) are checked whole.
import type { AnyConfigResource, DestinationRuleResource, VirtualServiceResource } from '../mesh/types.js';
import { listStep, type ListStep } from './mesh-lists.js';
import {
  definedSubsetKeys,
  subsetWarningsOf,
  unknownSubsetWarnings,
  type UnknownSubsetWarning,
} from './validate/unknown-subsets.js';

type ResolveHost = (host: string, namespace: string) => string;

/** More warned VirtualServices than this: their places are found by indexing the list once. */
const SCANS = 16;

export class SubsetWarnings {
  private virtualServices: readonly VirtualServiceResource[] | undefined;
  private destinationRules: readonly DestinationRuleResource[] | undefined;
  private readonly defined = new Map<string, number>();
  /** Per key, the VirtualServices naming it. */
  private readonly namedBy = new Map<string, Set<VirtualServiceResource>>();
  /** Per VirtualService, the keys it names (what to take out of namedBy when it goes). */
  private readonly names = new Map<VirtualServiceResource, readonly string[]>();
  private readonly warned = new Map<VirtualServiceResource, readonly UnknownSubsetWarning[]>();
  private last: readonly UnknownSubsetWarning[] = [];

  constructor(private readonly resolveHost: ResolveHost) {}

  /** The warnings of these lists, as unknownSubsetWarnings would list them. */
  warnings(
    virtualServices: readonly VirtualServiceResource[],
    destinationRules: readonly DestinationRuleResource[],
  ): readonly UnknownSubsetWarning[] {
    const vs = this.stepTo(this.virtualServices, virtualServices);
    const dr = this.stepTo(this.destinationRules, destinationRules);
    if (vs && dr) this.apply(virtualServices, vs, dr);
    else this.rebuild(virtualServices, destinationRules);
    this.virtualServices = virtualServices;
    this.destinationRules = destinationRules;
    return this.last;
  }

  /** How `to` was made from `from`: nothing when the same, undefined when not known. */
  private stepTo(
    from: readonly AnyConfigResource[] | undefined,
    to: readonly AnyConfigResource[],
  ): ListStep | undefined {
    if (from === undefined) return undefined;
    if (from === to) return { from, removed: [], added: [] };
    const step = listStep(to);
    return step?.from === from ? step : undefined;
  }

  private apply(list: readonly VirtualServiceResource[], vs: ListStep, dr: ListStep): void {
    const recheck = new Set<VirtualServiceResource>();
    const flipped = (key: string): void => {
      for (const v of this.namedBy.get(key) ?? []) recheck.add(v);
    };
    for (const rule of dr.removed as readonly DestinationRuleResource[])
      for (const key of definedSubsetKeys(rule, this.resolveHost)) {
        const n = (this.defined.get(key) ?? 0) - 1;
        if (n > 0) this.defined.set(key, n);
        else {
          this.defined.delete(key);
          flipped(key);
        }
      }
    for (const rule of dr.added as readonly DestinationRuleResource[])
      for (const key of definedSubsetKeys(rule, this.resolveHost)) {
        const n = (this.defined.get(key) ?? 0) + 1;
        this.defined.set(key, n);
        if (n === 1) flipped(key);
      }
    let changed = false;
    for (const v of vs.removed as readonly VirtualServiceResource[]) {
      recheck.delete(v);
      changed = this.forget(v) || changed;
    }
    for (const v of vs.added as readonly VirtualServiceResource[]) recheck.add(v);
    for (const v of recheck) {
      changed = this.forget(v) || changed;
      changed = this.check(v) || changed;
    }
    if (changed) this.last = this.inOrder(list);
  }

  private rebuild(
    virtualServices: readonly VirtualServiceResource[],
    destinationRules: readonly DestinationRuleResource[],
  ): void {
    this.defined.clear();
    this.namedBy.clear();
    this.names.clear();
    this.warned.clear();
    for (const rule of destinationRules)
      for (const key of definedSubsetKeys(rule, this.resolveHost))
        this.defined.set(key, (this.defined.get(key) ?? 0) + 1);
    for (const v of virtualServices) this.check(v);
    // The whole check's own answer: the same object twice in a hand-made list is listed twice.
    this.last = unknownSubsetWarnings(virtualServices, destinationRules, this.resolveHost);
  }

  /** Checks `v` and records what it names; true if it has warnings. */
  private check(v: VirtualServiceResource): boolean {
    const { keys, warnings } = subsetWarningsOf(v, (k) => this.defined.has(k), this.resolveHost);
    if (keys.length === 0) return false;
    this.names.set(v, keys);
    for (const key of keys) {
      let those = this.namedBy.get(key);
      if (!those) this.namedBy.set(key, (those = new Set()));
      those.add(v);
    }
    if (warnings.length === 0) return false;
    this.warned.set(v, warnings);
    return true;
  }

  /** Takes out what `v` named; true if it had warnings. */
  private forget(v: VirtualServiceResource): boolean {
    for (const key of this.names.get(v) ?? []) {
      const those = this.namedBy.get(key);
      those?.delete(v);
      if (those?.size === 0) this.namedBy.delete(key);
    }
    this.names.delete(v);
    return this.warned.delete(v);
  }

  /** The warned VirtualServices' warnings in the list's order. */
  private inOrder(list: readonly VirtualServiceResource[]): readonly UnknownSubsetWarning[] {
    const warned = [...this.warned.keys()];
    let place: (v: VirtualServiceResource) => number = (v) => list.indexOf(v);
    if (warned.length > SCANS) {
      const at = new Map(list.map((v, i) => [v, i]));
      place = (v) => at.get(v) ?? -1;
    }
    return warned
      .map((v) => [place(v), v] as const)
      .sort(([a], [b]) => a - b)
      .flatMap(([, v]) => this.warned.get(v) ?? []);
  }
}
