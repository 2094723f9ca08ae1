// The JSON the admin API sends, defined once: the admin views (admin/) build values of these types
// and the dashboard (ui/) reads them with `import type`. Field names are a contract: add, never
// rename. Only types, and no imports: the dashboard compiles this file in its own program (browser
// lib, no Node types), so it may reach nothing that does (tools/eslint-layers.mjs, `ui`).
// Parts that lower layers make (a stream's NACK, the store's rows, the config directory's issues)
// are spelt out here as sent; the compiler checks each of theirs against it where a view is built.

// ---- GET /debug/overviewz (and each registry's status in /debug/registryz)

export interface RegistryStatus {
  readonly synced: boolean;
  /** Serving a last known good state because the source is failing. */
  readonly stale: boolean;
  readonly lastError?: string;
  readonly lastErrorAt?: string;
  /** When the source last answered in full (the published snapshot is from then). */
  readonly lastSyncAt?: string;
  /** Serving a snapshot persisted by an earlier run (synced at this time) until the first live sync. */
  readonly restoredFrom?: string;
  readonly services: number;
  readonly endpoints: number;
  /**
   * Parts of the source the registry became ready without, each with the reason (e.g. a Consul
   * service whose query kept failing at start, past --consul-sync-timeout). Absent when none.
   */
  readonly incomplete?: readonly string[];
  /**
   * Parts of the source the registry is not ready without, each with the reason: /ready answers 503
   * while any is listed, though what did load is served (the config directory: a file of the initial
   * load that could not be read). Absent when none.
   */
  readonly unready?: readonly string[];
}

export interface Readiness {
  readonly ready: boolean;
  /** What /ready says, without the newline. */
  readonly detail: string;
}

export interface RecentError {
  readonly at: string;
  readonly source: 'config' | 'registry' | 'proxy';
  readonly subject: string;
  readonly message: string;
}

export interface OverviewzView extends Readiness {
  readonly registries: readonly { readonly name: string; readonly status: RegistryStatus }[];
  readonly counts: {
    readonly services: number;
    readonly endpoints: number;
    readonly proxies: number;
    readonly configFiles: number;
    readonly configFilesWithErrors: number;
  };
  readonly proxiesByState: Readonly<Record<SyncState, number>>;
  readonly pushes: number;
  readonly recentErrors: readonly RecentError[];
}

// ---- GET /debug/push_status

/** What a push rebuilt: endpoints only, services, or config. */
export type PushKind = 'eds' | 'services' | 'config';

/** What caused a push: registries and files (when the change said), and the hostnames that changed. */
export interface PushTrigger {
  readonly registries: readonly string[];
  readonly files: readonly string[];
  /** The source published this only after a quiet period of its own (the config directory's debounce). */
  readonly debounced?: boolean;
  /** The changed hostnames, at most MAX_TRIGGER_NAMES of them; empty for a config change. */
  readonly hostnames: readonly string[];
  /** How many hostnames changed in all. */
  readonly hostnameCount: number;
}

export interface PushRecord {
  readonly round: number;
  readonly kind: PushKind;
  readonly startedAt: string;
  readonly trigger: PushTrigger;
  readonly changesMerged: number;
  readonly debounceMs: number;
  /** Time to rebuild what changed and hand it to the streams; null until handed out. */
  readonly pushMs: number | null;
  /** Streams (proxies) the push gave work to; null until handed out. */
  readonly proxies: number | null;
  /** Responses sent per type while this was the newest push converging. */
  readonly responses: Readonly<Record<string, number>>;
  /** From the first change being seen to the last affected stream having sent; null until then. */
  readonly convergenceMs: number | null;
  /** The config generation of the serving view it pushed (0 before the config directory published). */
  readonly generation?: number;
}

export interface NackRecord {
  readonly at: string;
  readonly node: string | null;
  readonly connection: string;
  readonly type: string;
  readonly nonce: string;
  readonly code: number;
  readonly message: string;
  /** The config generation of the response NACKed, when the stream knew it. */
  readonly generation?: number;
}

/** One interval of the push chart. */
export interface PushBucket {
  /** Start of the interval (ISO time). */
  readonly at: string;
  readonly pushes: number;
  readonly converged: number;
  readonly convergenceMaxMs: number;
  readonly convergenceSumMs: number;
}

export interface PushStatusView {
  /** Pushes since the server started. */
  readonly pushes: number;
  /** The newest pushes, newest first. */
  readonly recent: readonly PushRecord[];
  /** Push rate and convergence per interval, oldest first, ending now. */
  readonly series: { readonly bucketSeconds: number; readonly buckets: readonly PushBucket[] };
  /** The newest NACKs, newest first. */
  readonly nacks: readonly NackRecord[];
}

// ---- GET /debug/syncz[?proxyID=ID]

/** The state istioctl's proxy-status prints (admin/syncz.ts decides it). */
export type SyncState = 'SYNCED' | 'NOT SENT' | 'STALE' | 'NACK';

/** A rejection by the client: the response it NACKed and its error. */
export interface Nack {
  readonly version: string;
  readonly nonce: string;
  readonly code: number;
  readonly message: string;
  readonly at: string;
}

export interface TypeSync {
  readonly state: SyncState;
  readonly sentVersion: string | null;
  readonly sentNonce: string | null;
  readonly sentAt: string | null;
  readonly ackedVersion: string | null;
  readonly ackedNonce: string | null;
  readonly ackedAt: string | null;
  /** Milliseconds since the last response was sent, while it is unanswered (STALE); else null. */
  readonly sinceSentMs: number | null;
  /** The rejection in force (until the next ACK). */
  readonly lastNack: Nack | null;
}

/** grpc: a proxyless gRPC client or server; sidecar and gateway: Envoy by its role. */
export type ProxyType = 'grpc' | 'sidecar' | 'gateway';

export interface ProxySync {
  readonly node: string;
  readonly connection: string;
  /** The generator family (as in /debug/adsz): grpc or envoy. */
  readonly kind: string;
  readonly proxyType: ProxyType;
  readonly api: string;
  readonly peer: string;
  readonly connectedAt: string;
  /** The worst state over its types: NACK, then STALE, then NOT SENT, then SYNCED. */
  readonly state: SyncState;
  /** Per subscribed type (CDS, EDS, LDS, RDS, in push order). */
  readonly types: Readonly<Record<string, TypeSync>>;
}

export interface SynczView {
  readonly proxies: readonly ProxySync[];
}

// ---- GET /debug/proxy_configz?proxyID=ID

export interface ClusterRow {
  readonly name: string;
  readonly service: string;
  readonly port: number | null;
  readonly subset: string;
  readonly direction: string;
  readonly type: string;
  readonly lb: string;
}

export interface ListenerRow {
  readonly name: string;
  /** The bound address, or null for a gRPC client's api_listener. */
  readonly address: string | null;
  readonly port: number | null;
  readonly destination: string;
}

export interface RouteRow {
  readonly name: string;
  readonly virtualHost: string;
  readonly domains: readonly string[];
  readonly match: string;
  readonly destination: string;
}

export interface EndpointRow {
  readonly cluster: string;
  readonly address: string;
  readonly port: number;
  readonly health: string;
  readonly weight: number;
  readonly locality: string;
  readonly priority: number;
}

export interface ProxyConfigzView {
  readonly proxyID: string;
  readonly clusters: readonly ClusterRow[];
  readonly listeners: readonly ListenerRow[];
  readonly routes: readonly RouteRow[];
  readonly endpoints: readonly EndpointRow[];
}

// ---- GET /debug/servicez[?q=TEXT]

export interface ServicezEndpoint {
  readonly address: string;
  readonly ports: Readonly<Record<string, number>>;
  readonly health: string;
  readonly weight: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly registry: string;
}

export interface ServicezPort {
  readonly name: string;
  readonly number: number;
  /** HTTP, HTTP2, GRPC, TCP, ... (model/service.ts, Protocol). */
  readonly protocol: string;
}

export interface ServicezService {
  readonly hostname: string;
  readonly namespace: string;
  readonly ports: readonly ServicezPort[];
  readonly resolution: string;
  readonly location: string;
  readonly registry: string;
  /** Registries that also define this hostname; their endpoints are merged, their Service is not. */
  readonly shadowed: readonly string[];
  /** `region/zone/subzone` → endpoints there. */
  readonly localities: Readonly<Record<string, readonly ServicezEndpoint[]>>;
  readonly endpointCount: number;
  readonly healthyCount: number;
}

export interface ServicezView {
  readonly total: number;
  readonly matched: number;
  readonly services: readonly ServicezService[];
}

// ---- GET /debug/configz

/** A problem found in a file. `line` is 1-based; 0 means the whole file (e.g. it could not be read). */
export interface ConfigIssue {
  readonly line: number;
  readonly column?: number;
  /** Field path inside the document, e.g. `spec.ports[1].number`. */
  readonly path?: string;
  readonly message: string;
}

/** Where a resource is: its `Kind/namespace/name`, file and line. */
export interface ResourceRef {
  readonly resource: string;
  readonly file: string;
  readonly line: number;
}

export interface ConfigFileView {
  readonly path: string;
  /** When the version now in force was loaded; null if the file never loaded cleanly. */
  readonly loadedAt: string | null;
  /** When the file was last read, successfully or not. */
  readonly checkedAt: string;
  /** 'error' means the last read failed and the previous good version (if any) is still served. */
  readonly status: 'ok' | 'error';
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** `Kind/namespace/name` of every resource the in-force version defines. */
  readonly resources: readonly string[];
}

export interface ConfigConflictView {
  readonly type: 'duplicate-resource' | 'duplicate-host';
  /** The resource key or the hostname both claim. */
  readonly subject: string;
  readonly kept: ResourceRef;
  readonly ignored: ResourceRef;
}

/** A problem only visible across resources (a selected WorkloadEntry that does not fit its service). */
export interface CrossResourceWarningView {
  readonly resource: ResourceRef;
  readonly message: string;
}

/** What one kind of client cannot be given of a resource in force. */
export interface TrafficLimitationView {
  /** `Kind/namespace/name`. */
  readonly resource: string;
  /** Field path in the resource, e.g. `spec.subsets[0].trafficPolicy.outlierDetection`. */
  readonly field: string;
  readonly clients: readonly ('envoy' | 'grpc')[];
  readonly reason: string;
  /** Set when only some versions of those clients are concerned: the rule's id in xds/proxy/client-capabilities.ts. */
  readonly rule?: string;
}

/**
 * A config file whose resources a connected proxy's NACK in force was generated from (issue 47): the
 * mark is computed from the streams as they are, so it goes when the proxy ACKs a later version or
 * disconnects.
 */
export interface NackMarkView {
  /** Relative to the config directory. */
  readonly file: string;
  /** The proxy's node id. */
  readonly node: string;
  /** Its node's user_agent_name and user_agent_version ('' when absent). */
  readonly client: string;
  readonly clientVersion: string;
  /** LDS, RDS, CDS or EDS. */
  readonly type: string;
  /** The resource the NACK message names, when it names one the proxy was sent. */
  readonly name?: string;
  readonly message: string;
  /** The config generation of the response NACKed; null when the server does not know it. */
  readonly generation: number | null;
}

/**
 * A resource not sent to some clients because they would reject it (xds/proxy/client-capabilities.ts,
 * `rejects`): they keep their last good version (`kept`), or, with none (`kept` null), do not have it.
 */
export interface WithheldPushView {
  /** The node's user_agent_name and user_agent_version. */
  readonly client: string;
  readonly clientVersion: string;
  /** LDS, RDS, CDS, EDS (or the type URL's last part for other types). */
  readonly type: string;
  readonly name: string;
  /** The rule, what the client would say, and why. */
  readonly reason: string;
  /** The rule's id in xds/proxy/client-capabilities.ts. */
  readonly rule: string;
  /** When this resource was first withheld (ISO time). */
  readonly since: string;
  /** Rebuilds withheld since then. */
  readonly count: number;
  /** Whether these clients keep a last good version (false: the resource is absent for them). */
  readonly kept: boolean;
  /** Node ids of the connected proxies of this client that hold or ask for the resource. */
  readonly proxies: readonly string[];
}

export interface ConfigzView {
  readonly dir: string;
  readonly synced: boolean;
  readonly files: readonly ConfigFileView[];
  readonly conflicts: readonly ConfigConflictView[];
  readonly warnings: readonly CrossResourceWarningView[];
  readonly limitations: readonly TrafficLimitationView[];
  /** Pushes withheld because a connected client would reject them (admin/withheld-view.ts). */
  readonly withheld: readonly WithheldPushView[];
  /** Every resource in force, as validated, by kind (`serviceEntries`, ...; mesh/ types them). */
  readonly resources: Readonly<Record<string, readonly unknown[]>>;
  /** Files a connected proxy's NACK in force came from (admin/nack-marks.ts), by file then node. */
  readonly nacks: readonly NackMarkView[];
}

// ---- GET /debug/historyz[?limit=N]

export interface HistoryChange {
  readonly at: string;
  readonly source: 'config' | 'registry';
  /** The file (config) or registry name. */
  readonly subject: string;
  /** accepted / rejected / removed, or synced / failed / restored. */
  readonly event: string;
  readonly detail: string;
  /** The replica that wrote it ('' before replicas were named). */
  readonly replica: string;
  /** Config rows: the config generation their file step published; null for registry events and older rows. */
  readonly generation?: number | null;
}

export interface ProxyConnectionView {
  readonly nodeId: string;
  readonly peer: string;
  readonly kind: string;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly lastAcks: Readonly<Record<string, unknown>>;
  readonly lastNacks: Readonly<Record<string, unknown>>;
}

export interface HistoryzView {
  readonly changes: readonly HistoryChange[];
  /** Where `changes` come from: `local`, `shared` or `local (shared store unreachable)`. */
  readonly changesFrom: string;
  readonly proxies: readonly ProxyConnectionView[];
}

// ---- GET /debug/caz

export type JoinTokenState = 'live' | 'used up' | 'expired' | 'revoked';

export interface IssuedCertificateView {
  readonly serial: string;
  readonly identity: string;
  readonly nodeId: string | null;
  /** The enrollment the certificate belongs to (null for certificates issued before enrollments). */
  readonly enrollmentId?: string | null;
  readonly notBefore: string;
  readonly notAfter: string;
  readonly issuedAt: string;
}

export interface CazView {
  readonly trustDomain: string;
  readonly plugin: boolean;
  readonly roots: readonly {
    readonly subject: string;
    readonly serial: string;
    readonly notBefore: string;
    readonly notAfter: string;
    readonly sha256: string;
  }[];
  readonly joinTokens: readonly {
    readonly id: string;
    readonly identity: string;
    readonly state: JoinTokenState;
    readonly usesLeft: number;
    readonly expiresAt: string;
    readonly createdAt: string;
    readonly revokedAt: string | null;
  }[];
  readonly issued: readonly IssuedCertificateView[];
  /** With a shared store: where the tokens and certificates are instead (both lists are then empty). */
  readonly sharedStore?: string;
}

// ---- POST /debug/config_sync

/** The config generation in force once the config directory took in what is on disk (0: none). */
export interface ConfigSyncView {
  readonly generation: number;
}

// ---- GET /debug/waitz?generation=N

/** Where a stream is with a config generation (admin/waitz.ts decides it). */
export type WaitState = 'SYNCED' | 'PENDING' | 'NACK';

export interface WaitNack {
  readonly type: string;
  readonly name?: string;
  readonly message: string;
  readonly version: string;
}

export interface WaitProxy {
  readonly id: string;
  readonly connection: string;
  readonly state: WaitState;
  /** Types with a response of generation >= N unanswered, or work queued. */
  readonly pending: readonly string[];
  readonly nack: WaitNack | null;
}

export interface WaitzView {
  readonly generation: number;
  /** The config generation in force now. */
  readonly current: number;
  /** A push including generation >= N has been handed out to every stream it concerns. */
  readonly pushed: boolean;
  /** The streams generation >= N changed something for, by node id. */
  readonly proxies: readonly WaitProxy[];
}

// ---- POST /debug/diff

// POST /debug/diff (`portolan diff`): a candidate of the whole config directory, previewed per
// connected proxy. Nothing is applied and nothing is sent.

/** The request body: every file of the directory's next version, paths relative to its root. */
export interface DiffRequest {
  readonly files: readonly { readonly path: string; readonly content: string }[];
}

export type DiffOp = 'add' | 'change' | 'remove';
export type DiffType = 'LDS' | 'RDS' | 'CDS' | 'EDS';

export interface DiffChange {
  readonly op: DiffOp;
  readonly type: DiffType;
  readonly name: string;
  /** `change` only: the unified diff (`-`/`+`/` ` lines, no headers) of the resource's JSON; else ''. */
  readonly diff: string;
}

/** A proxy a resource it would be sent differs for; changes by type (LDS, RDS, CDS, EDS), then name. */
export interface DiffProxy {
  readonly id: string;
  readonly changes: readonly DiffChange[];
}

/** A candidate file the directory would reject or hold back (file relative to the directory). */
export interface DiffFileProblem {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

/** A resource a proxy's client would reject (xds/validate/acceptance.ts): listed here, not as a change. */
export interface DiffProxyProblem {
  readonly proxy: string;
  readonly type: DiffType;
  readonly name: string;
  readonly message: string;
}

/** The whole body of POST /debug/diff, at most (its contract; admin/diff.ts enforces it). */
export const MAX_DIFF_BODY_BYTES = 64 * 1024 * 1024;

export interface DiffView {
  /** Only the affected proxies, by id. */
  readonly proxies: readonly DiffProxy[];
  /** File problems first (by file, line), then proxy problems (by proxy, type, name). */
  readonly problems: readonly (DiffFileProblem | DiffProxyProblem)[];
  readonly evaluatedMs: number;
}
