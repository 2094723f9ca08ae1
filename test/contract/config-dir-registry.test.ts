// The registry contract against the config directory: ServiceEntries in real files in a temporary
// directory, read through chokidar.
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigDirRegistry } from '../../config-dir/registry.js';
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
    return {
      registry: new ConfigDirRegistry({ dir, debounceMs: 20 }),
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
