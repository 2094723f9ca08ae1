// The bootstraps `portolan agent` prints (--print-bootstrap) or writes (--envoy-bootstrap,
// --grpc-bootstrap), pointing at the agent: built by `portolan bootstrap`'s own builders. One per
// workload: its node, identity, certificate directory and sockets; with several workloads a file flag
// writes DIR/NAME/FILE for each (the run dir's NAME/ is the workload's socket directory, so its
// bootstrap sits beside its sockets), and each Envoy's admin listener takes --admin-addr's port plus
// the workload's place in the list, so the Envoys of one VM do not collide.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { buildBootstrap, validateBootstrap, type BootstrapOptions } from './bootstrap.js';
import type { AgentSettings, WorkloadSettings } from './agent-settings.js';
import { buildGrpcBootstrap } from './grpc-bootstrap.js';
import { OptionError, type HostAndPort } from '../adapters/option-values.js';

/** Where a bootstrap's xDS points without a TCP port (only a Unix socket): a placeholder, overridden. */
const NO_TCP: HostAndPort = { host: '127.0.0.1', port: 15020 };

/**
 * A bootstrap pointing at this agent for workload `w` (default: the first): Envoy (ADS on the xDS
 * socket, SDS on the SDS socket) or gRPC (the TCP port with --listen-xds, else the xDS socket as
 * `unix:PATH`).
 */
export function renderBootstrap(
  kind: 'envoy' | 'grpc',
  s: AgentSettings,
  w: WorkloadSettings = s.workloads[0] ?? s,
): string {
  const index = Math.max(0, s.workloads.indexOf(w));
  const options: BootstrapOptions = {
    nodeId: w.nodeId,
    cluster: w.identity.serviceAccount,
    namespace: w.identity.namespace,
    xdsAddr: s.listenXds ?? NO_TCP,
    adminAddr: { ...s.adminAddr, port: s.adminAddr.port + index },
    metadata: {
      SERVICE_ACCOUNT: w.identity.serviceAccount,
      PORTOLAN_CERT_DIR: w.certDir,
      // With the DNS proxy on, transparent capture listens on the addresses it answers (Istio's keys).
      ...(s.dns && { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' }),
    },
    certDir: w.certDir,
    kind,
    maxConnections: 50_000,
    trustDomain: w.identity.trustDomain,
    ...(kind === 'envoy' && w.xdsSocket && { xdsPipe: w.xdsSocket }),
    ...(kind === 'envoy' && w.sdsSocket && { sdsPipe: w.sdsSocket }),
  };
  if (kind === 'grpc') {
    const bootstrap = buildGrpcBootstrap(options);
    const [server] = bootstrap.xds_servers as Record<string, unknown>[];
    // gRPC's name syntax for a Unix socket (unix:PATH, absolute here), read by every gRPC library.
    if (!s.listenXds && w.xdsSocket && server) server.server_uri = `unix:${w.xdsSocket}`;
    return `${JSON.stringify(bootstrap, null, 2)}\n`;
  }
  const bootstrap = JSON.parse(JSON.stringify(buildBootstrap(options))) as Record<string, unknown>;
  const problems = validateBootstrap(bootstrap);
  if (problems.length > 0) throw new OptionError(`bootstrap fails validation:\n  ${problems.join('\n  ')}`);
  return `${JSON.stringify(bootstrap, null, 2)}\n`;
}

/** The workload --print-bootstrap prints: the only one, or the one a bare `--workload NAME` selects. */
export function printedWorkload(s: AgentSettings): WorkloadSettings {
  if (s.selected !== undefined) {
    const w = s.workloads.find((x) => x.name === s.selected);
    if (w) return w;
  }
  if (s.workloads.length === 1) return s.workloads[0] ?? s;
  throw new OptionError(
    `--print-bootstrap: ${s.workloads.length} workloads; select one with a bare --workload NAME (${s.workloads.map((w) => w.name).join(', ')})`,
  );
}

/** Where `--envoy-bootstrap FILE`/`--grpc-bootstrap FILE` goes for `w`: FILE, or DIR/NAME/FILE. */
export function bootstrapPath(file: string, w: WorkloadSettings): string {
  return w.name === undefined ? file : join(dirname(file), w.name, basename(file));
}

/** Writes one bootstrap per workload (created whole, then renamed into place). */
export function writeBootstraps(kind: 'envoy' | 'grpc', file: string, s: AgentSettings): string[] {
  const written: string[] = [];
  for (const w of s.workloads) {
    const path = bootstrapPath(file, w);
    if (w.name !== undefined) mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
    writeFileAtomically(path, renderBootstrap(kind, s, w));
    written.push(path);
  }
  return written;
}

function writeFileAtomically(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, path);
}
