// The agent modules the flags ask for (agent/module.ts): per workload, its own stream to the control
// plane (node id `agent/NODE_ID`) with its registration into its WorkloadGroup and the group's probe;
// agent-wide, the DNS proxy, fed over the first workload's stream (the namespace is the agent's).
import { DnsModule } from '../agent/dns/dns-module.js';
import { systemUpstreams, type Upstream } from '../agent/dns/upstreams.js';
import type { AgentModule } from '../agent/module.js';
import { ControlModule } from '../agent/workload/control-module.js';
import { RegistrationModule } from '../agent/workload/registration-module.js';
import type { AgentSettings, WorkloadSettings } from './agent-settings.js';

/** The node id of a workload's own stream to the control plane (beside its local clients' streams). */
export function agentNodeId(settings: WorkloadSettings): string {
  return `agent/${settings.nodeId}`;
}

/** A workload's control stream and registration; the control module too when `dns` needs it. */
function workloadParts(
  settings: AgentSettings,
  w: WorkloadSettings,
  needsControl: boolean,
): { modules: AgentModule[]; control?: ControlModule } {
  if (!w.group && !needsControl) return { modules: [] };
  const control = new ControlModule({
    nodeId: agentNodeId(w),
    ...(w.group && { group: w.group }),
    ...(settings.instanceIp && { instanceIp: settings.instanceIp }),
  });
  const modules: AgentModule[] = [control];
  if (w.group) modules.push(new RegistrationModule(control, w.group, settings.instanceIp ?? '127.0.0.1'));
  return { modules, control };
}

function dnsModule(settings: AgentSettings, control: ControlModule): DnsModule | undefined {
  if (!settings.dns) return undefined;
  const { addr, upstreams } = settings.dns;
  // Never forward to ourselves (a resolv.conf pointing at the proxy).
  const self = (u: Upstream): boolean => u.host === addr.host && u.port === addr.port;
  return new DnsModule(control, {
    host: addr.host,
    port: addr.port,
    upstreams: upstreams ? () => upstreams : () => systemUpstreams().filter((u) => !self(u)),
  });
}

/** The single form's modules, all agent-wide: the agent's own stream, registration and probes, DNS. */
export function agentModules(settings: AgentSettings): { all: AgentModule[]; dns?: DnsModule } {
  const { modules, control } = workloadParts(settings, settings, settings.dns !== undefined);
  const dns = control && dnsModule(settings, control);
  return { all: dns ? [...modules, dns] : modules, ...(dns && { dns }) };
}

/** With --workload: each workload's own modules, and the agent-wide ones (DNS on the first's stream). */
export function workloadModules(settings: AgentSettings): {
  perWorkload: AgentModule[][];
  agentWide: AgentModule[];
  dns?: DnsModule;
} {
  let dns: DnsModule | undefined;
  const perWorkload = settings.workloads.map((w, i) => {
    const { modules, control } = workloadParts(settings, w, i === 0 && settings.dns !== undefined);
    if (i === 0 && control) dns = dnsModule(settings, control);
    return modules;
  });
  return { perWorkload, agentWide: dns ? [dns] : [], ...(dns && { dns }) };
}
