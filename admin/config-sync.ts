// POST /debug/config_sync: the config directory takes in every change on disk now and answers the
// config generation in force after that (`portolan wait` calls it first, so a write made just before
// is covered, debounce included). Bounded in time: a directory that does not answer within
// SYNC_TIMEOUT_MS (a hung network filesystem) is a 503, and the rescan goes on on its own.
import type { IncomingMessage } from 'node:http';
import type { ConfigSyncView } from '../model/admin-api.js';

/** Longer than one file's read timeout (5 s, config-dir/read-file.ts), so a slow file is its own error. */
export const SYNC_TIMEOUT_MS = 15_000;

/** A body is not needed; one this long is refused rather than read. */
const MAX_BODY_BYTES = 4096;

export interface SyncSource {
  sync?(): Promise<number>;
}

export interface SyncResult {
  readonly status: number;
  readonly body: ConfigSyncView | { readonly error: string };
}

export async function configSync(
  config: SyncSource | undefined,
  req: IncomingMessage,
  timeoutMs = SYNC_TIMEOUT_MS,
): Promise<SyncResult> {
  const length = Number(req.headers['content-length'] ?? 0);
  if (length > MAX_BODY_BYTES)
    return {
      status: 413,
      body: { error: `a config_sync body is not read; at most ${MAX_BODY_BYTES} bytes` },
    };
  req.resume(); // nothing to read: drain it
  const sync = config?.sync?.bind(config);
  if (!sync) return { status: 200, body: { generation: 0 } };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([sync(), timeout]);
    if (outcome === 'timeout')
      return {
        status: 503,
        body: { error: `the config directory did not take in its files within ${timeoutMs} ms` },
      };
    return { status: 200, body: { generation: outcome } };
  } catch (e) {
    return {
      status: 500,
      body: { error: `config sync failed: ${e instanceof Error ? e.message : String(e)}` },
    };
  } finally {
    clearTimeout(timer);
  }
}
