// What one build read, by the keys a change names (model/change.ts): a Service, the endpoints or
// the traffic rules of a hostname, a config kind read as a whole, or a listing of the catalog. The
// resource cache gives every build a ReadSet of its own through the generate context (its catalog,
// config and index record into it: recording-context.ts) and rebuilds a resource when a change names
// one of its keys. A value memoized for the serving view keeps the ReadSet it was built with, which
// each use adds to the using build's (view-memo.ts).

/** A config kind of MeshConfig read as a whole (by namespace and selector, or listed). */
export type ConfigKind =
  | 'virtualServices'
  | 'destinationRules'
  | 'gateways'
  | 'sidecars'
  | 'peerAuthentications'
  | 'authorizationPolicies'
  | 'requestAuthentications'
  | 'workloadGroups';

export class ReadSet {
  /** Hostnames whose Service was read (its ports, resolution, ...). */
  readonly services = new Set<string>();
  /** Hostnames whose endpoints were read. */
  readonly endpoints = new Set<string>();
  /** Hostnames whose VirtualServices or DestinationRules were looked up. */
  readonly rules = new Set<string>();
  /** Config kinds read as a whole. */
  readonly kinds = new Set<ConfigKind>();
  /** Every Service was listed: any service change may matter. */
  allServices = false;
  /** Endpoints were listed across services (by IP): any endpoint change may matter. */
  allEndpoints = false;

  /** Adds what `other` read (a memoized value this build used). */
  add(other: ReadSet): void {
    if (other === this) return;
    if (other.allServices) this.allServices = true;
    if (other.allEndpoints) this.allEndpoints = true;
    for (const h of other.services) this.services.add(h);
    for (const h of other.endpoints) this.endpoints.add(h);
    for (const h of other.rules) this.rules.add(h);
    for (const k of other.kinds) this.kinds.add(k);
  }
}
