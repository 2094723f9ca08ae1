// The admin API as the dashboard reads it: GET JSON from this server (same origin), and the shapes
// of the views it uses (the fields read here; the server sends more). The admin views are checked
// against these at build time (test/contract/admin-ui-types.ts): a server-side rename fails the build.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string): Promise<T> {
  // Built apart from the call: test/contract/admin-ui-types.ts compiles this file under Node's
  // fetch types too, whose RequestInit lacks the browser's `cache`.
  const init = { headers: { accept: 'application/json' }, cache: 'no-store' as const };
  const res = await fetch(path, init);
  const body = (await res.json().catch(() => null)) as unknown;
  if (!res.ok) {
    const message = (body as { error?: unknown } | null)?.error;
    throw new ApiError(res.status, typeof message === 'string' ? message : `${path}: HTTP ${res.status}`);
  }
  return body as T;
}

export type SyncState = 'SYNCED' | 'NOT SENT' | 'STALE' | 'NACK';

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
  readonly ackedAt: string | null;
  readonly sinceSentMs: number | null;
  readonly lastNack: Nack | null;
}

export interface ProxySync {
  readonly node: string;
  readonly connection: string;
  readonly kind: string;
  readonly proxyType: 'grpc' | 'sidecar' | 'gateway';
  readonly api: string;
  readonly peer: string;
  readonly connectedAt: string;
  readonly state: SyncState;
  readonly types: Readonly<Record<string, TypeSync>>;
}

export interface Syncz {
  readonly proxies: readonly ProxySync[];
}

export interface RegistryStatus {
  readonly synced: boolean;
  readonly stale: boolean;
  readonly lastError?: string;
  readonly lastErrorAt?: string;
  readonly lastSyncAt?: string;
  readonly restoredFrom?: string;
  readonly services: number;
  readonly endpoints: number;
}

export interface Overviewz {
  readonly ready: boolean;
  readonly detail: string;
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
  readonly recentErrors: readonly {
    readonly at: string;
    readonly source: string;
    readonly subject: string;
    readonly message: string;
  }[];
}

export interface PushRecord {
  readonly round: number;
  readonly kind: string;
  readonly startedAt: string;
  readonly trigger: {
    readonly registries: readonly string[];
    readonly files: readonly string[];
    readonly hostnames: readonly string[];
    readonly hostnameCount: number;
  };
  readonly changesMerged: number;
  readonly pushMs: number | null;
  readonly proxies: number | null;
  readonly responses: Readonly<Record<string, number>>;
  readonly convergenceMs: number | null;
}

export interface PushBucket {
  readonly at: string;
  readonly pushes: number;
  readonly converged: number;
  readonly convergenceMaxMs: number;
  readonly convergenceSumMs: number;
}

export interface NackRecord {
  readonly at: string;
  readonly node: string | null;
  readonly connection: string;
  readonly type: string;
  readonly code: number;
  readonly message: string;
}

export interface PushStatus {
  readonly pushes: number;
  readonly recent: readonly PushRecord[];
  readonly series: { readonly bucketSeconds: number; readonly buckets: readonly PushBucket[] };
  readonly nacks: readonly NackRecord[];
}

export interface ServicezEndpoint {
  readonly address: string;
  readonly ports: Readonly<Record<string, number>>;
  readonly health: string;
  readonly weight: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly registry: string;
}

export interface Servicez {
  readonly total: number;
  readonly matched: number;
  readonly services: readonly {
    readonly hostname: string;
    readonly namespace: string;
    readonly ports: readonly { readonly name: string; readonly number: number; readonly protocol: string }[];
    readonly resolution: string;
    readonly location: string;
    readonly registry: string;
    readonly shadowed: readonly string[];
    readonly localities: Readonly<Record<string, readonly ServicezEndpoint[]>>;
    readonly endpointCount: number;
    readonly healthyCount: number;
  }[];
}

export interface ConfigIssue {
  readonly line: number;
  readonly path?: string;
  readonly message: string;
}

export interface Configz {
  readonly dir: string;
  readonly files: readonly {
    readonly path: string;
    readonly loadedAt: string | null;
    readonly checkedAt: string;
    readonly status: 'ok' | 'error';
    readonly errors: readonly ConfigIssue[];
    readonly warnings: readonly ConfigIssue[];
    readonly resources: readonly string[];
  }[];
  readonly conflicts: readonly {
    readonly type: string;
    readonly subject: string;
    readonly kept: { readonly file: string; readonly line: number };
    readonly ignored: { readonly file: string; readonly line: number };
  }[];
  readonly warnings: readonly {
    readonly resource: { readonly resource: string; readonly file: string; readonly line: number };
    readonly message: string;
  }[];
  readonly limitations: readonly {
    readonly resource: string;
    readonly field: string;
    readonly clients: readonly string[];
    readonly reason: string;
  }[];
}

export interface Historyz {
  readonly changes: readonly {
    readonly at: string;
    readonly source: string;
    readonly subject: string;
    readonly event: string;
    readonly detail: string;
  }[];
  readonly proxies: readonly {
    readonly nodeId: string;
    readonly peer: string;
    readonly kind: string;
    readonly connectedAt: string;
    readonly disconnectedAt: string | null;
    readonly lastNacks: Readonly<Record<string, unknown>>;
  }[];
}

export interface Caz {
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
    readonly state: string;
    readonly usesLeft: number;
    readonly expiresAt: string;
    readonly createdAt: string;
  }[];
  readonly issued: readonly {
    readonly serial: string;
    readonly identity: string;
    readonly nodeId: string | null;
    readonly notAfter: string;
    readonly issuedAt: string;
  }[];
}

export interface ProxyConfigz {
  readonly clusters: readonly {
    readonly name: string;
    readonly service: string;
    readonly port: number | null;
    readonly subset: string;
    readonly type: string;
    readonly lb: string;
  }[];
  readonly listeners: readonly {
    readonly name: string;
    readonly address: string | null;
    readonly port: number | null;
    readonly destination: string;
  }[];
  readonly routes: readonly {
    readonly name: string;
    readonly virtualHost: string;
    readonly domains: readonly string[];
    readonly match: string;
    readonly destination: string;
  }[];
  readonly endpoints: readonly {
    readonly cluster: string;
    readonly address: string;
    readonly port: number;
    readonly health: string;
    readonly weight: number;
    readonly locality: string;
    readonly priority: number;
  }[];
}
