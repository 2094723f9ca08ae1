// The demo's echo backends: one on each endpoint the control plane lists for the service
// (/debug/registryz), named VERSION@ADDRESS:PORT so the split shows which subset answered. Run again
// after a config edit, it starts backends for new endpoints and stops those whose endpoint is gone.
import { startEchoBackend, type EchoBackend } from './echo-backend.js';

export interface ServiceEndpoint {
  readonly address: string;
  readonly port: number;
  readonly version: string | undefined;
}

interface RegistryzEndpoint {
  address?: string;
  ports?: Record<string, number>;
  labels?: Record<string, string>;
}
interface RegistryzService {
  hostname?: string;
  ports?: { name?: string; number?: number }[];
  endpoints?: RegistryzEndpoint[];
}
interface Registryz {
  registries?: { services?: RegistryzService[] }[];
}

export function backendName(e: ServiceEndpoint): string {
  return `${e.version ? `${e.version}@` : ''}${e.address}:${e.port}`;
}

/** The endpoints of HOST:PORT in every registry, with the port each listens on. */
export async function serviceEndpoints(
  adminBase: string,
  host: string,
  port: number,
): Promise<ServiceEndpoint[]> {
  const res = await fetch(`${adminBase}/debug/registryz`, { signal: AbortSignal.timeout(2_000) });
  const body = (await res.json()) as Registryz;
  const out: ServiceEndpoint[] = [];
  for (const registry of body.registries ?? [])
    for (const service of registry.services ?? []) {
      if (service.hostname !== host) continue;
      const portName = service.ports?.find((p) => p.number === port)?.name;
      if (portName === undefined) continue;
      for (const e of service.endpoints ?? []) {
        const target = e.ports?.[portName];
        if (e.address && target) out.push({ address: e.address, port: target, version: e.labels?.version });
      }
    }
  return out;
}

export class DemoBackends {
  private readonly running = new Map<string, EchoBackend>();
  /** Endpoints a backend could not listen on (each reported once). */
  private readonly failed = new Set<string>();
  private reconciled = false;

  constructor(
    private readonly adminBase: string,
    private readonly host: string,
    private readonly port: number,
    private readonly log: (line: string) => void,
  ) {}

  names(): string[] {
    return [...this.running.keys()].sort();
  }

  /** Starts and stops backends to match the service's endpoints. */
  async reconcile(): Promise<void> {
    const wanted = new Map(
      (await serviceEndpoints(this.adminBase, this.host, this.port)).map((e) => [backendName(e), e]),
    );
    for (const [name, backend] of this.running)
      if (!wanted.has(name)) {
        this.running.delete(name);
        await backend.stop();
        this.log(`backend ${name} stopped: its endpoint is gone`);
      }
    for (const [name, e] of wanted) {
      if (this.running.has(name) || this.failed.has(name)) continue;
      try {
        this.running.set(name, await startEchoBackend(name, e.address, e.port));
        if (this.reconciled) this.log(`backend ${name} started: a new endpoint`);
      } catch (err) {
        this.failed.add(name);
        const why = err instanceof Error ? err.message : String(err);
        this.log(`backend ${name} could not listen on ${e.address}:${e.port}: ${why}`);
      }
    }
    this.reconciled = true;
  }

  async stop(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((b) => b.stop()));
  }
}
