// The agent's own stream to the control plane as a module (agent/module.ts): started before the
// modules that use it (registration and probes, the DNS proxy), opened once they subscribed.
import type { AgentContext, AgentModule } from '../module.js';
import { ControlStream } from './control-stream.js';

export interface ControlModuleOptions {
  /** The node id of the agent's own stream. */
  readonly nodeId: string;
  /** `--group`: the WorkloadGroup (in the agent's namespace) to register into. */
  readonly group?: string;
  /** `--instance-ip`: the VM's address; default: the one the control plane sees. */
  readonly instanceIp?: string;
}

/** The node metadata key that asks the control plane to register the VM (Istio's name). */
export const GROUP_META = 'AUTO_REGISTER_GROUP';

export class ControlModule implements AgentModule {
  readonly name = 'control stream';
  private streamValue: ControlStream | undefined;
  private readonly users: ((stream: ControlStream, context: AgentContext) => void)[] = [];

  constructor(readonly options: ControlModuleOptions) {}

  /** `use` runs at start with the stream, before it opens: subscribe there. */
  onStart(use: (stream: ControlStream, context: AgentContext) => void): void {
    this.users.push(use);
  }

  get stream(): ControlStream | undefined {
    return this.streamValue;
  }

  start(context: AgentContext): Promise<void> {
    const { identity } = context;
    const stream = new ControlStream(
      context.upstream,
      {
        id: this.options.nodeId,
        metadata: {
          NAMESPACE: identity.namespace,
          SERVICE_ACCOUNT: identity.serviceAccount,
          TRUST_DOMAIN: identity.trustDomain,
          GENERATOR: 'grpc',
          ...(this.options.group && { [GROUP_META]: this.options.group }),
          ...(this.options.instanceIp && { INSTANCE_IPS: this.options.instanceIp }),
        },
      },
      context.logger.child({ component: 'control-stream' }),
    );
    this.streamValue = stream;
    for (const use of this.users) use(stream, context);
    stream.open();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.streamValue?.close();
    return Promise.resolve();
  }

  notReady(): string | undefined {
    const refusal = this.streamValue?.refusal;
    return refusal ? `the control plane refused this agent: ${refusal}` : undefined;
  }
}
