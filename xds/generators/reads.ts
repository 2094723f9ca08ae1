// What one build read, by the keys a change names (model/change.ts): a Service, the endpoints or
// the traffic rules of a hostname, a config kind read as a whole, or a listing of the catalog. The
// resource cache gives every build a ReadSet of its own through the generate context (its catalog,
// config and index record into it: recording-context.ts) and rebuilds a resource when a change names
// one of its keys. A value memoized for the serving view keeps the ReadSet it was built with, which
// each use adds to the using build's (view-memo.ts).
import type { MeshKindList } from '../../mesh/config-kinds.js';

/** A config kind of MeshConfig read as a whole (by namespace and selector, or listed): mesh's table names them. */
export type ConfigKind = MeshKindList;

const NONE: ReadonlySet<never> = new Set();

export class ReadSet {
  // Made on first use: most builds read one or two of them, and a build makes a ReadSet.
  private serviceHosts: Set<string> | undefined;
  private endpointHosts: Set<string> | undefined;
  private ruleHosts: Set<string> | undefined;
  private configKinds: Set<ConfigKind> | undefined;
  /** Every Service was listed: any service change may matter. */
  allServices = false;
  /** Endpoints were listed across services (by IP): any endpoint change may matter. */
  allEndpoints = false;

  /** Hostnames whose Service was read (its ports, resolution, ...). */
  get services(): ReadonlySet<string> {
    return this.serviceHosts ?? NONE;
  }

  /** Hostnames whose endpoints were read. */
  get endpoints(): ReadonlySet<string> {
    return this.endpointHosts ?? NONE;
  }

  /** Hostnames whose VirtualServices or DestinationRules were looked up. */
  get rules(): ReadonlySet<string> {
    return this.ruleHosts ?? NONE;
  }

  /** Config kinds read as a whole. */
  get kinds(): ReadonlySet<ConfigKind> {
    return this.configKinds ?? NONE;
  }

  service(host: string): void {
    (this.serviceHosts ??= new Set()).add(host);
  }

  endpointsOf(host: string): void {
    (this.endpointHosts ??= new Set()).add(host);
  }

  rulesOf(host: string): void {
    (this.ruleHosts ??= new Set()).add(host);
  }

  kind(kind: ConfigKind): void {
    (this.configKinds ??= new Set()).add(kind);
  }

  /** Adds what `other` read (a memoized value this build used). */
  add(other: ReadSet): void {
    if (other === this) return;
    if (other.allServices) this.allServices = true;
    if (other.allEndpoints) this.allEndpoints = true;
    this.serviceHosts = merged(this.serviceHosts, other.serviceHosts);
    this.endpointHosts = merged(this.endpointHosts, other.endpointHosts);
    this.ruleHosts = merged(this.ruleHosts, other.ruleHosts);
    this.configKinds = merged(this.configKinds, other.configKinds);
  }
}

/** `mine` with `theirs` added (a copy when mine is none yet: a memoized value's set is never shared). */
function merged<T>(mine: Set<T> | undefined, theirs: ReadonlySet<T> | undefined): Set<T> | undefined {
  if (!theirs || theirs.size === 0) return mine;
  if (!mine) return new Set(theirs);
  for (const x of theirs) mine.add(x);
  return mine;
}
