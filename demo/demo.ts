// The demo, start to stop: a control plane on the example config, an echo backend on each endpoint
// the config declares for echo.example.internal:50051, the README's proxyless gRPC client calling it
// in a loop, and the traffic split per backend every second. Editing the VirtualService's weights
// (examples/config/traffic/echo-split.yaml) moves the split while it runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DemoBackends } from './backends.js';
import { startClient, writeBootstrap, type DemoClient } from './client.js';
import { controlPlane, type ControlPlane } from './control-plane.js';
import { SplitCounter, type SplitWindow } from './split.js';

export const DEMO_HOST = 'echo.example.internal';
export const DEMO_PORT = 50051;
/** The file the demo tells the user to edit, relative to the config directory. */
export const SPLIT_FILE = join('traffic', 'echo-split.yaml');

export interface DemoOptions {
  readonly configDir: string;
  readonly xdsAddr: string;
  readonly httpAddr: string;
  /** Use a control plane already serving at httpAddr/xdsAddr instead of starting one. */
  readonly attach: boolean;
  /** Each second's split. */
  readonly onWindow: (window: SplitWindow, backends: readonly string[]) => void;
  /** Backends started or stopped after a config change, and backends that could not start. */
  readonly log: (line: string) => void;
}

export interface Demo {
  readonly plane: ControlPlane;
  readonly client: DemoClient;
  /** The backends running now, by name. */
  backends(): string[];
  /** The split file under the config directory the control plane watches. */
  readonly splitFile: string;
  /** Stops the client, the backends and (if it started it) the control plane. */
  stop(): Promise<void>;
}

export async function startDemo(options: DemoOptions): Promise<Demo> {
  const stops: (() => Promise<void>)[] = [];
  const timers: NodeJS.Timeout[] = [];
  const stop = async (): Promise<void> => {
    for (const t of timers.splice(0)) clearInterval(t);
    for (const s of stops.splice(0).reverse()) await s();
  };
  try {
    const plane = await controlPlane(options);
    stops.push(() => plane.stop());
    const tmp = mkdtempSync(join(tmpdir(), 'portolan-demo-client-'));
    stops.push(async () => rmSync(tmp, { recursive: true, force: true }));

    const backends = new DemoBackends(plane.adminBase, DEMO_HOST, DEMO_PORT, options.log);
    stops.push(() => backends.stop());
    await backends.reconcile();
    if (backends.names().length === 0)
      throw new Error(`the control plane lists no endpoints for ${DEMO_HOST}:${DEMO_PORT}`);
    // Follow config edits that add or remove endpoints; a failed look is retried next time.
    let reconciling = false;
    timers.push(
      setInterval(() => {
        if (reconciling) return;
        reconciling = true;
        backends
          .reconcile()
          .catch(() => {})
          .finally(() => (reconciling = false));
      }, 1_000),
    );

    const counter = new SplitCounter();
    const client = startClient(writeBootstrap(tmp, plane.xdsAddress), (r) => counter.add(r));
    stops.push(() => client.stop());
    timers.push(setInterval(() => options.onWindow(counter.take(), backends.names()), 1_000));

    const configDir = (await plane.configDir()) ?? options.configDir;
    return { plane, client, backends: () => backends.names(), splitFile: join(configDir, SPLIT_FILE), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
