// The DNS proxy as an agent module: its name table follows the control plane's NDS resource, live,
// over the agent's own stream; it serves from the first table on, and from the last one through
// outages. /debug/dnsz on the status port shows the counters and the table size.
import type { AgentContext, AgentModule } from '../module.js';
import { messageType } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { NAME_TABLE } from '../../xds/proto/type-urls.js';
import type { ControlModule } from '../workload/control-module.js';
import { DnsProxy } from './dns-proxy.js';
import { DnsNameTable, type NameInfo } from './name-table.js';
import type { Upstream } from './upstreams.js';

/** The NDS resource's name (xds/generators/agent/name-table.ts). */
export const NAME_TABLE_RESOURCE = 'name-table';

export interface DnsModuleOptions {
  readonly host: string;
  readonly port: number;
  readonly upstreams: () => readonly Upstream[];
}

export class DnsModule implements AgentModule {
  readonly name = 'DNS proxy';
  private proxy: DnsProxy | undefined;
  private table: DnsNameTable | undefined;
  private received = false;

  constructor(
    control: ControlModule,
    private readonly options: DnsModuleOptions,
  ) {
    control.onStart((stream, context) => {
      const table = this.tableFor(context);
      stream.subscribe(NAME_TABLE, [NAME_TABLE_RESOURCE], (resources) => this.apply(table, resources));
    });
  }

  /** HOST:PORT it serves on, once started. */
  get address(): string | undefined {
    return this.proxy?.address;
  }

  get stats(): DnsProxy['stats'] | undefined {
    return this.proxy?.stats;
  }

  async start(context: AgentContext): Promise<void> {
    const table = this.tableFor(context);
    this.proxy = new DnsProxy({
      host: this.options.host,
      port: this.options.port,
      table,
      upstreams: this.options.upstreams,
      logger: context.logger.child({ component: 'dns' }),
    });
    await this.proxy.start();
    context.status.addRoute('/debug/dnsz', () =>
      Promise.resolve({
        status: 200,
        type: 'application/json',
        body: `${JSON.stringify(
          {
            address: this.proxy?.address,
            names: table.size,
            tableReceived: this.received,
            upstreams: this.options.upstreams(),
            ...this.proxy?.stats,
          },
          null,
          2,
        )}\n`,
      }),
    );
    context.logger.info({ address: this.proxy.address }, 'DNS proxy serving');
  }

  async stop(): Promise<void> {
    await this.proxy?.stop();
  }

  private tableFor(context: AgentContext): DnsNameTable {
    this.table ??= new DnsNameTable(context.identity.namespace);
    return this.table;
  }

  private apply(table: DnsNameTable, resources: readonly EncodedResource[]): void {
    const type = messageType('istio.networking.nds.v1.NameTable');
    const [first] = resources;
    const decoded = first
      ? (type.toObject(type.decode(first.value), { arrays: true }) as { table?: Record<string, NameInfo> })
      : {};
    table.update(decoded.table ?? {});
    this.received = true;
  }
}
