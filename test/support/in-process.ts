// An in-process control plane (mock registry [+ a config directory] → aggregate → ADS on loopback)
// for integration tests.
import * as grpc from '@grpc/grpc-js';
import { MockRegistry } from '../../adapters/mock/registry.js';
import { AggregateDiscovery } from '../../aggregate/aggregate-discovery.js';
import { ConfigDirRegistry } from '../../config-dir/registry.js';
import { silentLogger } from '../../log/logger.js';
import { AdsServer } from '../../xds/server/ads-server.js';
import type { Registry } from '../../model/registry.js';

export interface InProcessPlane {
  readonly mock: MockRegistry;
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  /** Present when started with `configDir`. */
  readonly config?: ConfigDirRegistry;
  readonly address: string;
  stop(): Promise<void>;
}

export async function startInProcessPlane({
  pushWindowMs = 0,
  extraRegistries = [],
  configDir,
}: {
  pushWindowMs?: number;
  extraRegistries?: Registry[];
  configDir?: string;
} = {}): Promise<InProcessPlane> {
  const mock = new MockRegistry();
  const config =
    configDir === undefined ? undefined : new ConfigDirRegistry({ dir: configDir, debounceMs: 20 });
  const discovery = new AggregateDiscovery([mock, ...(config ? [config] : []), ...extraRegistries]);
  await discovery.start();
  const ads = new AdsServer({
    discovery,
    logger: silentLogger,
    pushWindowMs,
    ...(config && { meshConfig: config }),
  });
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
    ...(config && { config }),
    address: `127.0.0.1:${port}`,
    async stop() {
      ads.stop();
      server.forceShutdown();
      await discovery.stop();
    },
  };
}
