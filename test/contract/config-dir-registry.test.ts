// The registry contract against the config directory: ServiceEntries in real files in a temporary
// directory, read through chokidar.
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigDirRegistry } from '../../config-dir/registry.js';
import { eventually } from '../support/eventually.js';
import { registryContract, type ContractService } from '../support/registry-contract.js';

registryContract({
  name: 'config',
  capabilities: {
    // A source failure here is a broken file: its last good version stays in force. (An unreadable
    // directory fails start() instead, and cannot be made unreadable to root anyway.)
    sourceFails: true,
    // A broken file is read around: the rest of the directory still syncs at start.
    failureAtStartHoldsSync: false,
    restore: 'until-live-sync',
    emptySourceAfterRestore: 'replaces',
  },
  quietMs: 500,
  async create(seed) {
    const dir = await mkdtemp(join(tmpdir(), 'portolan-contract-config-'));
    const hostname = (name: string): string => `${name}.config.contract`;
    const file = (name: string): string => join(dir, `${name}.yaml`);
    /** The files written, by service name: what repairSource() puts back. */
    const written = new Map<string, string>();
    const put = async (service: ContractService): Promise<void> => {
      const text = serviceEntry(service, hostname(service.name));
      written.set(service.name, text);
      await writeFile(file(service.name), text);
    };
    for (const service of seed) await put(service);
    const broken = (): string => {
      const [name] = written.keys();
      if (name === undefined) throw new Error('no file to break');
      return name;
    };
    const registry = new ConfigDirRegistry({ dir, debounceMs: 20 });
    let markers = 0;
    /** Whether the registry lists `name` (a path relative to the directory) among the files it read. */
    const lists = (name: string): boolean => registry.debugState().files.some((f) => f.path === name);
    return {
      registry,
      hostname,
      async write({ before, after }) {
        if (after) await put(after);
        else if (before) {
          written.delete(before.name);
          await unlink(file(before.name));
        }
      },
      breakSource: () => writeFile(file(broken()), 'kind: ServiceEntry\nspec: {hosts: [\n'),
      repairSource: () => writeFile(file(broken()), written.get(broken()) ?? ''),
      // A marker file written after everything else, holding no resource: once the registry lists it
      // among the files it read, the watcher has delivered (and the registry applied) every step
      // before it, since a directory's events arrive in order. Removed again the same way, so the
      // directory is as the suite left it.
      async settled() {
        const marker = `settle-${++markers}.yaml`;
        await writeFile(join(dir, marker), '# a marker: no resource\n');
        await eventually(() => lists(marker), { what: `the registry to read ${marker}` });
        await unlink(join(dir, marker));
        await eventually(() => !lists(marker), { what: `the registry to drop ${marker}` });
        await registry.settled();
      },
      close: () => rm(dir, { recursive: true, force: true }),
    };
  },
});

function serviceEntry(service: ContractService, host: string): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: ${service.name}
  namespace: contract
spec:
  hosts: [${host}]
  resolution: STATIC
  ports:
    - {name: web, number: 8080, protocol: ${service.protocol}}
  endpoints: [${service.addresses.map((address) => `{address: ${address}}`).join(', ')}]
`;
}
