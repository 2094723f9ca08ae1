// How long from saving a WorkloadEntry file to a proxyless gRPC client's calls reaching the new
// endpoint: `portolan serve` as a child process, two Echo backends, the real grpc-js-xds client.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callEcho, startEchoBackend } from '../test/support/echo-backend.js';
import { eventually } from '../test/support/eventually.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { xdsEchoClient } from '../test/support/xds-client.js';
import { printTable, summarize } from './table.js';

const ITERATIONS = 20;
const HOST = 'echo.bench.internal';

function workload(address: string, port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: echo-vm, labels: { app: echo } }
spec: { address: ${address}, ports: { grpc: ${port} }, labels: { app: echo } }
`;
}

export async function editLatency(): Promise<void> {
  const a = await startEchoBackend('a', '127.0.0.1');
  const b = await startEchoBackend('b', '127.0.0.2', a.port);
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-'));
  writeFileSync(
    join(dir, 'service.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo } }
`,
  );
  writeFileSync(join(dir, 'vm.yaml'), workload(a.address, a.port));
  const portolan = await startPortolanProcess(['--config-dir', dir, '--data-dir', join(dir, 'data')]);
  const client = xdsEchoClient(`xds:///${HOST}:50051`, portolan.xdsAddress, 'bench-client');
  const samples: number[] = [];
  try {
    await eventually(async () => {
      if ((await callEcho(client)) !== 'a') throw new Error('not yet on a');
    });
    for (let i = 0; i < ITERATIONS; i++) {
      const next = i % 2 === 0 ? b : a;
      const started = performance.now();
      writeFileSync(join(dir, 'vm.yaml'), workload(next.address, next.port));
      await eventually(
        async () => {
          if ((await callEcho(client)) !== next.name) throw new Error('old endpoint');
        },
        { timeoutMs: 10_000, intervalMs: 2 },
      );
      samples.push(performance.now() - started);
    }
  } finally {
    client.close();
    await portolan.stop();
    await a.stop();
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(
    `File edit → gRPC client on the new endpoint (ms). Setup: portolan serve child process, config-dir debounce 100 ms, push window 100 ms, one grpc-js-xds client polling every 2 ms, ${ITERATIONS} edits.`,
    [summarize(samples)],
  );
}
