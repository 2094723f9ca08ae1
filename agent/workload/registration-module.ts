// `portolan agent --group NAME`: the VM registers into its WorkloadGroup (the control plane does it
// while the agent's stream is open) and runs the group's readiness probe against the application,
// reporting each change of state over that stream. The probe comes from the control plane (the
// group may change it); /debug/workload on the status port shows the last check.
import type { ReadinessProbe } from '../../mesh/types.js';
import { messageType } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { WORKLOAD_REGISTRATION } from '../../xds/proto/type-urls.js';
import type { AgentContext, AgentModule } from '../module.js';
import type { ControlModule } from './control-module.js';
import type { ControlStream } from './control-stream.js';
import { Prober } from './probe.js';

export interface WorkloadStatus {
  readonly group: string;
  readonly registration: 'registered' | 'connecting' | 'refused';
  readonly reason?: string;
  readonly probe: ReadinessProbe | null;
  /** The state the probe decided and reported; null before a threshold was reached or without a probe. */
  readonly healthy: boolean | null;
  readonly lastCheck: { readonly at: string; readonly ok: boolean; readonly message: string } | null;
}

export class RegistrationModule implements AgentModule {
  readonly name = 'workload registration';
  private prober: Prober | undefined;
  private probeJson = '';
  private stream: ControlStream | undefined;

  constructor(
    private readonly control: ControlModule,
    private readonly group: string,
    /** Where the application listens when the probe names no host. */
    private readonly appHost: string,
  ) {
    control.onStart((stream, context) => this.attach(stream, context));
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.prober?.stop();
    return Promise.resolve();
  }

  status(): WorkloadStatus {
    const refusal = this.stream?.refusal;
    const last = this.prober?.last;
    return {
      group: this.group,
      registration: refusal ? 'refused' : this.stream?.isOpen() ? 'registered' : 'connecting',
      ...(refusal && { reason: refusal }),
      probe: this.probeJson ? (JSON.parse(this.probeJson) as ReadinessProbe) : null,
      healthy: this.prober?.healthy ?? null,
      lastCheck: last ? { at: last.at, ok: last.ok, message: last.message } : null,
    };
  }

  private attach(stream: ControlStream, context: AgentContext): void {
    this.stream = stream;
    const name = `${context.identity.namespace}/${this.group}`;
    stream.subscribe(WORKLOAD_REGISTRATION, [name], (resources) => this.apply(resources, context));
    context.status.addRoute('/debug/workload', () =>
      Promise.resolve({
        status: 200,
        type: 'application/json',
        body: `${JSON.stringify(this.status(), null, 2)}\n`,
      }),
    );
  }

  /** The group's probe, as the control plane sent it: (re)started when it changed. */
  private apply(resources: readonly EncodedResource[], context: AgentContext): void {
    const type = messageType('portolan.agent.v1.WorkloadRegistration');
    const [first] = resources;
    const decoded = first ? (type.toObject(type.decode(first.value)) as { probe_json?: string }) : {};
    const json = decoded.probe_json ?? '';
    if (json === this.probeJson) return;
    this.probeJson = json;
    this.prober?.stop();
    this.prober = undefined;
    if (!json) return;
    const probe = JSON.parse(json) as ReadinessProbe;
    context.logger.info({ group: this.group, probe }, 'running the WorkloadGroup probe');
    this.prober = new Prober({
      probe,
      host: this.appHost,
      onState: (healthy, message) => {
        context.logger[healthy ? 'info' : 'warn'](
          { group: this.group, ...(message && { reason: message }) },
          healthy ? 'workload healthy' : 'workload unhealthy',
        );
        this.stream?.reportHealth(healthy, message);
      },
    });
    this.prober.start();
  }
}
