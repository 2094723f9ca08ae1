// How a feature plugs into `portolan agent`: a module is started with the agent's shared parts
// (the workload identity, the upstream connection to send on, the xDS proxy and its node cache,
// metrics, the status port) and stopped in reverse order. The built-in parts are assembled in
// agent.ts; later features (workload registration, health probes reported upstream, a DNS proxy)
// are modules given to `startAgent`.
import type { Logger } from '../log/logger.js';
import type { CertificateKeeper } from '../ca/workload-agent.js';
import type { UpstreamConnection } from './upstream/connection.js';
import type { AgentMetrics } from './status/metrics.js';
import type { Route } from './status/status-server.js';
import type { AgentIdentity } from './xds/messages.js';
import type { NodeCache } from './xds/node-cache.js';
import type { XdsProxy } from './xds/xds-proxy.js';

/** Where a module adds its own GET endpoints on the status port. */
export interface RouteTable {
  addRoute(path: string, route: Route): void;
}

export interface AgentContext {
  /** The workload certificate: current(), onChange(). */
  readonly certificates: CertificateKeeper;
  readonly identity: AgentIdentity;
  /** The mTLS connection to the control plane; `openStream(path)` for a module's own gRPC streams. */
  readonly upstream: UpstreamConnection;
  readonly xds: XdsProxy;
  readonly cache: NodeCache;
  readonly metrics: AgentMetrics;
  /** `addRoute` for a module's own GET endpoints (with several workloads, each workload's own). */
  readonly status: RouteTable;
  readonly dataDir: string;
  readonly logger: Logger;
  /** The workload's name (`--workload name=`); absent in the single-identity form. */
  readonly workload?: string;
}

export interface AgentModule {
  readonly name: string;
  start(context: AgentContext): Promise<void>;
  stop(): Promise<void>;
  /** Why the agent is not ready from this module's side; undefined when it has no objection. */
  notReady?(): string | undefined;
}
