// An in-process control plane (mock registry → aggregate → ADS on loopback) for integration tests.
import * as grpc from '@grpc/grpc-js';
import { MockRegistry } from '../../adapters/mock/mock-registry.js';
import { AggregateDiscovery } from '../../aggregate/aggregate-discovery.js';
import { silentLogger } from '../../log/logger.js';
import { AdsServer } from '../../xds/ads-server.js';
import type { Registry } from '../../adapters/registry.js';

export interface InProcessPlane {
  readonly mock: MockRegistry;
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  readonly address: string;
  stop(): Promise<void>;
}

export async function startInProcessPlane({
  pushWindowMs = 0,
  extraRegistries = [],
}: { pushWindowMs?: number; extraRegistries?: Registry[] } = {}): Promise<InProcessPlane> {
  const mock = new MockRegistry();
  const discovery = new AggregateDiscovery([mock, ...extraRegistries]);
  await discovery.start();
  const ads = new AdsServer({ discovery, logger: silentLogger, pushWindowMs });
  const server = new grpc.Server();
  ads.register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    mock,
    discovery,
    ads,
    address: `127.0.0.1:${port}`,
    async stop() {
      ads.stop();
      server.forceShutdown();
      await discovery.stop();
    },
  };
}
