// The config files a directory tree holds now, listed afresh (POST /debug/config_sync): what the
// watcher would report, without waiting for its events. The same tree as DirTree watches: hidden
// entries skipped, symlinks followed (a directory reached twice through links is listed once), and
// bounded, so a runaway tree is an error rather than a stall.
import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isConfigFile } from './load-file.js';

/** Entries looked at per rescan, at most: far above any config directory a person writes. */
export const MAX_RESCAN_ENTRIES = 100_000;

/** The config files under `root`, as paths relative to it with `/` separators. */
export async function listConfigFiles(root: string, maxEntries = MAX_RESCAN_ENTRIES): Promise<string[]> {
  const found: string[] = [];
  const seen = new Set<string>();
  let entries = 0;
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const real = await realpath(dir).catch(() => undefined);
    if (real === undefined || seen.has(real)) return;
    seen.add(real);
    const list = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of list) {
      if (++entries > maxEntries)
        throw new Error(`the config directory holds more than ${maxEntries} entries`);
      if (entry.name.startsWith('.')) continue;
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      const path = join(dir, entry.name);
      const isDir = entry.isDirectory() || (entry.isSymbolicLink() && (await isDirectory(path)));
      if (isDir) await walk(path, relative);
      else if (isConfigFile(relative)) found.push(relative);
    }
  };
  await walk(root, '');
  return found;
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}
