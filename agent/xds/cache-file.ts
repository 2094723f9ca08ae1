// The node cache on disk, so that an agent restarted during a control-plane outage still serves its
// clients: one JSON file per node in DATA_DIR/xds-cache/ (named by a hash of the node id), written
// atomically (temporary file, fsync, rename) a moment after the cache changes, removed when the node
// is evicted. Unreadable or oversized files are reported and removed; they hold nothing else.
import { createHash } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log/logger.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import type { CacheListener, CachedNode, CachedType, NodeCache } from './node-cache.js';

// 2: keyed by the whole node (cache-key.ts); a format-1 file, keyed by node id alone, is dropped.
const FORMAT = 2;

interface FileType {
  readonly typeUrl: string;
  readonly versionInfo: string;
  readonly updatedAt: number;
  readonly resources: readonly { name: string; version: string; typeUrl: string; value: string }[];
}

interface CacheFile {
  readonly format: number;
  readonly nodeId: string;
  readonly updatedAt: number;
  readonly types: readonly FileType[];
}

export class CacheFiles implements CacheListener {
  private readonly dirty = new Map<string, CachedNode | undefined>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    private readonly logger: Logger,
    private readonly options: { readonly debounceMs?: number; readonly maxFileBytes: number },
  ) {}

  changed(nodeId: string, node: CachedNode | undefined): void {
    this.dirty.set(nodeId, node);
    this.timer ??= setTimeout(() => this.flush(), this.options.debounceMs ?? 500);
  }

  /** Writes every pending change now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.dirty.size === 0) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const [nodeId, node] of this.dirty) {
      const path = join(this.dir, fileName(nodeId));
      try {
        if (!node) rmSync(path, { force: true });
        else writeAtomically(path, JSON.stringify(toFile(node)));
      } catch (err) {
        this.logger.error({ err, nodeId, path }, 'cannot write the xDS cache file');
      }
    }
    this.dirty.clear();
  }

  /** Restores every readable file into `cache`, oldest first (so the newest survive the bounds). */
  load(cache: NodeCache): number {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    // A write interrupted by a crash left only its temporary file.
    for (const n of names) if (n.endsWith('.tmp')) rmSync(join(this.dir, n), { force: true });
    names = names.filter((n) => n.endsWith('.json'));
    const nodes: CachedNode[] = [];
    for (const name of names) {
      const path = join(this.dir, name);
      try {
        const size = statSync(path).size;
        if (size > this.options.maxFileBytes)
          throw new Error(`${size} bytes, above the limit of ${this.options.maxFileBytes}`);
        const node = fromFile(JSON.parse(readFileSync(path, 'utf8')) as CacheFile);
        if (fileName(node.nodeId) !== name) throw new Error('the file name does not match its node');
        nodes.push(node);
      } catch (err) {
        this.logger.warn({ path, reason: (err as Error).message }, 'dropping an unreadable xDS cache file');
        rmSync(path, { force: true });
      }
    }
    nodes.sort((a, b) => a.updatedAt - b.updatedAt);
    for (const n of nodes) cache.restore(n);
    // Files of nodes the bounds left out are stale now.
    for (const n of nodes)
      if (!cache.node(n.nodeId)) rmSync(join(this.dir, fileName(n.nodeId)), { force: true });
    return cache.list().length;
  }

  stop(): void {
    this.flush();
  }
}

function fileName(nodeId: string): string {
  return `${createHash('sha256').update(nodeId).digest('hex').slice(0, 32)}.json`;
}

function toFile(node: CachedNode): CacheFile {
  return {
    format: FORMAT,
    nodeId: node.nodeId,
    updatedAt: node.updatedAt,
    types: [...node.types].map(([typeUrl, t]) => ({
      typeUrl,
      versionInfo: t.versionInfo,
      updatedAt: t.updatedAt,
      resources: [...t.resources.values()].map((r) => ({
        name: r.name,
        version: r.version,
        typeUrl: r.typeUrl,
        value: r.value.toString('base64'),
      })),
    })),
  };
}

function fromFile(file: CacheFile): CachedNode {
  const list: unknown = file.types;
  if (file.format !== FORMAT || typeof file.nodeId !== 'string' || !Array.isArray(list))
    throw new Error('not an xDS cache file of this version');
  const types = new Map<string, CachedType>();
  let bytes = 0;
  for (const t of file.types) {
    const resources = new Map<string, EncodedResource>();
    for (const r of t.resources) {
      if (typeof r.name !== 'string' || typeof r.value !== 'string') throw new Error('malformed resource');
      const value = Buffer.from(r.value, 'base64');
      bytes += value.length;
      resources.set(r.name, { name: r.name, version: String(r.version), typeUrl: String(r.typeUrl), value });
    }
    types.set(String(t.typeUrl), {
      versionInfo: String(t.versionInfo),
      resources,
      updatedAt: Number(t.updatedAt),
    });
  }
  return { nodeId: file.nodeId, types, bytes, updatedAt: Number(file.updatedAt) };
}

function writeAtomically(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
