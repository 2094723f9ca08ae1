// A raw SotW ADS client that behaves like a well-mannered Envoy: subscribes to CDS and LDS
// (wildcard), follows them with EDS for the EDS clusters and RDS for the routes the listeners name,
// and ACKs every response. For tests and the screenshot mesh that need a proxy in SYNCED state on
// every type without an Envoy binary.
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { decodedResources, RawAdsClient, type DecodedResponse } from './raw-ads-client.js';

type Resource = Record<string, unknown>;

export class AckingAdsClient {
  private readonly client: RawAdsClient;
  private closed = false;
  private readonly names = new Map<string, string[]>();
  /** Every response received, for assertions. */
  readonly received: DecodedResponse[] = [];

  constructor(address: string, node: object) {
    this.client = new RawAdsClient(address);
    this.client.send({ node, type_url: CLUSTER });
    this.client.send({ type_url: LISTENER });
    void this.loop();
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      let res: DecodedResponse;
      try {
        res = await this.client.next(1000);
      } catch {
        continue; // no response this second (or the stream ended: `closed` decides)
      }
      this.received.push(res);
      this.client.ack(res, this.names.get(res.type_url) ?? []);
      if (res.type_url === CLUSTER) this.follow(ENDPOINT, edsClusters(decodedResources(res)));
      if (res.type_url === LISTENER) this.follow(ROUTE, routeNames(decodedResources(res)));
    }
  }

  private follow(typeUrl: string, names: string[]): void {
    const before = this.names.get(typeUrl) ?? [];
    if (names.length === 0 || names.join('\0') === before.join('\0')) return;
    this.names.set(typeUrl, names);
    const last = [...this.received].reverse().find((r) => r.type_url === typeUrl);
    this.client.send({
      type_url: typeUrl,
      resource_names: names,
      ...(last && { version_info: last.version_info, response_nonce: last.nonce }),
    });
  }
}

function edsClusters(clusters: Resource[]): string[] {
  return clusters
    .filter((c) => c.type === 'EDS')
    .map((c) => String(c.name))
    .sort();
}

function routeNames(listeners: Resource[]): string[] {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') {
      const o = v as Resource;
      const rds = o.rds as Resource | undefined;
      if (rds && typeof rds.route_config_name === 'string') names.add(rds.route_config_name);
      Object.values(o).forEach(visit);
    }
  };
  visit(listeners);
  return [...names].sort();
}
