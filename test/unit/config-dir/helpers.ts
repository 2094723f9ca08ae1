// Shared helpers for the config-dir tests: temp directories and loading files without a watcher.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfigFile, type FileLoad } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { buildSnapshot, type Conversion } from '../../../config-dir/conversion.js';

export async function makeTempDir(): Promise<{
  dir: string;
  write: (rel: string, text: string) => Promise<void>;
  cleanup: () => Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'portolan-config-'));
  return {
    dir,
    write: async (rel, text) => {
      await mkdir(dirname(join(dir, rel)), { recursive: true });
      await writeFile(join(dir, rel), text);
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Loads files (path → text) the way the registry does, without a watcher. */
export function loadAll(files: Record<string, string>): {
  loads: FileLoad[];
  conversion: Conversion;
  merged: ReturnType<typeof mergeFiles>;
} {
  const loads = Object.entries(files).map(([path, text]) => loadConfigFile(path, text));
  for (const load of loads) {
    if (load.errors.length > 0)
      throw new Error(`unexpected errors in ${load.path}: ${JSON.stringify(load.errors)}`);
  }
  const merged = mergeFiles(loads);
  return { loads, merged, conversion: buildSnapshot(merged.serviceEntries, merged.workloadEntries) };
}

/** A WorkloadEntry document. */
export function workloadEntry(name: string, spec: string, extraMeta = ''): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: ${name}
  namespace: default
${extraMeta}spec:
${spec}`;
}
