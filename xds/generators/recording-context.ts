// The generate context of one build, recording what it reads into the build's ReadSet (reads.ts):
// its catalog notes each Service and endpoint list looked up and each listing, its mesh index the
// host of each VirtualService and DestinationRule lookup and the kind behind every other lookup, and
// its config each kind read as a whole. A generator reaches the catalog and the config only through
// these, so it cannot read a kind without its build depending on it. The views are made on first
// use in the build: a build that never touches the index pays nothing for it.
import type { Catalog, CoLocatedEndpoint } from '../../model/catalog.js';
import type { PortEndpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Proxy } from '../proxy/proxy.js';
import type { GenerateContext } from './generator.js';
import type { ViewMemo } from './view-memo.js';
import type { ConfigKind, ReadSet } from './reads.js';

/** `ctx` recording into `reads`: what a build, or a memoized value's build, is given. */
export function recordingContext(ctx: GenerateContext, reads: ReadSet): GenerateContext {
  return new RecordingContext(ctx instanceof RecordingContext ? ctx.base : ctx, reads);
}

class RecordingContext implements GenerateContext {
  readonly proxy: Proxy;
  readonly memo: ViewMemo;
  readonly trustDomain: string | undefined;
  readonly faults: boolean;
  private catalogView: Catalog | undefined;
  private configView: MeshConfig | undefined;
  private indexView: MeshIndex | undefined;

  constructor(
    /** The context read from, which records nothing. */
    readonly base: GenerateContext,
    readonly reads: ReadSet,
  ) {
    this.proxy = base.proxy;
    this.memo = base.memo;
    this.trustDomain = base.trustDomain;
    this.faults = base.faults;
  }

  get catalog(): Catalog {
    return (this.catalogView ??= new RecordingCatalog(this.base.catalog, this.reads));
  }

  get config(): MeshConfig {
    return (this.configView ??= recordingConfig(this.base.config, this.reads));
  }

  get index(): MeshIndex {
    return (this.indexView ??= recordingIndex(this.base.index, this.reads, this.config));
  }
}

class RecordingCatalog implements Catalog {
  constructor(
    private readonly inner: Catalog,
    private readonly reads: ReadSet,
  ) {}

  services(): readonly Service[] {
    this.reads.allServices = true;
    return this.inner.services();
  }

  service(hostname: string): Service | undefined {
    this.reads.service(hostname);
    return this.inner.service(hostname);
  }

  endpoints(hostname: string, port: number): readonly PortEndpoint[] {
    // The endpoints of a service port: the Service's port names map them.
    this.reads.service(hostname);
    this.reads.endpointsOf(hostname);
    return this.inner.endpoints(hostname, port);
  }

  endpointsByIp(ips: readonly string[]): readonly CoLocatedEndpoint[] {
    // Every service's endpoints, with their Service and port.
    this.reads.allServices = true;
    this.reads.allEndpoints = true;
    return this.inner.endpointsByIp(ips);
  }
}

const EVERY_KIND: readonly ConfigKind[] = [
  'virtualServices',
  'destinationRules',
  'gateways',
  'sidecars',
  'peerAuthentications',
  'authorizationPolicies',
  'requestAuthentications',
  'workloadGroups',
];

/**
 * What reading each field of MeshConfig reads. Every field is listed (a new one does not compile
 * until it is): a kind records itself; the generation, which any config change moves, every kind;
 * serve-wide settings nothing (they are fixed while serving).
 */
const CONFIG_FIELDS: { readonly [K in keyof Required<MeshConfig>]: readonly ConfigKind[] } = {
  generation: EVERY_KIND,
  virtualServices: ['virtualServices'],
  destinationRules: ['destinationRules'],
  gateways: ['gateways'],
  sidecars: ['sidecars'],
  peerAuthentications: ['peerAuthentications'],
  authorizationPolicies: ['authorizationPolicies'],
  requestAuthentications: ['requestAuthentications'],
  workloadGroups: ['workloadGroups'],
  pathNormalization: [],
};

/** The config as a build sees it: each field read notes its kinds (getters on a shared prototype). */
class RecordingConfig {
  constructor(
    readonly inner: MeshConfig,
    readonly reads: ReadSet,
  ) {}
}
for (const [field, kinds] of Object.entries(CONFIG_FIELDS)) {
  Object.defineProperty(RecordingConfig.prototype, field, {
    enumerable: true,
    get(this: RecordingConfig): unknown {
      for (const kind of kinds) this.reads.kind(kind);
      return this.inner[field as keyof MeshConfig];
    },
  });
}

function recordingConfig(inner: MeshConfig, reads: ReadSet): MeshConfig {
  // The getters above make every field of MeshConfig (CONFIG_FIELDS is exhaustive).
  return new RecordingConfig(inner, reads) as unknown as MeshConfig;
}

type Method = (...args: never[]) => unknown;
/** Per public method of an index: what a call reads, given its first argument. */
type Notes<T> = {
  readonly [K in keyof T]: T[K] extends Method ? (reads: ReadSet, first: unknown) => void : never;
};

/** `inner` with every public method noting its read first (the index classes keep private state). */
function recorded<T extends object>(inner: T, reads: ReadSet, notes: Notes<T>): T {
  const view = Object.create(inner) as Record<string, unknown>;
  for (const key of Object.keys(notes)) {
    const method = (inner as Record<string, (...args: unknown[]) => unknown>)[key];
    const note = (notes as Record<string, (reads: ReadSet, first: unknown) => void>)[key];
    if (!method || !note) continue;
    view[key] = (...args: unknown[]): unknown => {
      note(reads, args[0]);
      return method.apply(inner, args);
    };
  }
  return view as T;
}

const ruleOfHost = (reads: ReadSet, host: unknown): void => {
  reads.rulesOf(String(host));
};
const kind =
  (k: ConfigKind) =>
  (reads: ReadSet): void => {
    reads.kind(k);
  };

const VIRTUAL_SERVICE_NOTES: Notes<MeshIndex['virtualServices']> = { lookup: ruleOfHost };
const DESTINATION_RULE_NOTES: Notes<MeshIndex['destinationRules']> = { lookup: ruleOfHost };
const SIDECAR_NOTES: Notes<MeshIndex['sidecars']> = {
  lookup: kind('sidecars'),
  scope: kind('sidecars'),
  outboundPolicy: kind('sidecars'),
};
const AUTHORIZATION_NOTES: Notes<MeshIndex['authorization']> = {
  policiesFor: kind('authorizationPolicies'),
  requestAuthenticationsFor: kind('requestAuthentications'),
};

/** The index as a build sees it: rule lookups note their host, the rest their kind. */
function recordingIndex(inner: MeshIndex, reads: ReadSet, config: MeshConfig): MeshIndex {
  return new RecordingIndex(inner, reads, config);
}

class RecordingIndex {
  private vs: MeshIndex['virtualServices'] | undefined;
  private dr: MeshIndex['destinationRules'] | undefined;
  private sc: MeshIndex['sidecars'] | undefined;
  private authz: MeshIndex['authorization'] | undefined;

  constructor(
    private readonly inner: MeshIndex,
    private readonly reads: ReadSet,
    readonly config: MeshConfig,
  ) {}

  get virtualServices(): MeshIndex['virtualServices'] {
    return (this.vs ??= recorded(this.inner.virtualServices, this.reads, VIRTUAL_SERVICE_NOTES));
  }

  get destinationRules(): MeshIndex['destinationRules'] {
    return (this.dr ??= recorded(this.inner.destinationRules, this.reads, DESTINATION_RULE_NOTES));
  }

  get sidecars(): MeshIndex['sidecars'] {
    return (this.sc ??= recorded(this.inner.sidecars, this.reads, SIDECAR_NOTES));
  }

  get authorization(): MeshIndex['authorization'] {
    return (this.authz ??= recorded(this.inner.authorization, this.reads, AUTHORIZATION_NOTES));
  }
}
