// The churn benchmark's baseline, as raw-ads-server.ts is the storm's: the bare edit path on this
// machine and Node, with nothing of Portolan's in it. A forked helper (fleet.ts's Helper) that loads
// one flat directory (as Portolan does, which also runs the parser a thousand times before the first
// change), then watches it with fs.watch, and per changed file, after the same 50 ms quiet period
// and burst bound as Portolan's watcher, reads it, parses it with js-yaml (Portolan's quick parser),
// turns it into JSON, writes a JSON log line, and keeps its text in SQLite (WAL, one transaction per
// 600 ms window at synchronous = NORMAL, as Portolan's write-behind history does). No validation,
// model, catalog, push or metrics: what is left of a change's CPU when those are taken away, and how
// much of a fresh process's first changes goes to V8 compiling the path.
// Argv: the directory, and a scratch directory for the database and the log. Sends { ev: 'ready' }
// once watching; exits on { cmd: 'close' }.
import { closeSync, openSync, readdirSync, readFileSync, watch, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadAll } from 'js-yaml';

const QUIET_MS = 50;
const WRITE_WINDOW_MS = 600;

const usage = (): never => {
  throw new Error('usage: raw-edit-loop DIR SCRATCH');
};
const dir = process.argv[2] ?? usage();
const scratch = process.argv[3] ?? usage();

const db = new Database(join(scratch, 'raw-edit-loop.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, text TEXT NOT NULL, at TEXT NOT NULL)');
const upsert = db.prepare(
  'INSERT INTO files (path, text, at) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET text = excluded.text, at = excluded.at',
);
const commit = db.transaction((rows: readonly [string, string, string][]) => {
  for (const row of rows) upsert.run(...row);
});
const log = openSync(join(scratch, 'raw-edit-loop.log'), 'a');

const parsed = new Map<string, unknown[]>();
const dirty = new Set<string>();
let quiet: NodeJS.Timeout | undefined;
let pending: [string, string, string][] = [];
let window: NodeJS.Timeout | undefined;

/** Reads, parses and logs `names`, and queues their texts for the next window's commit. */
function load(names: Iterable<string>): void {
  for (const name of names) {
    const text = readFileSync(join(dir, name), 'utf8');
    const docs = loadAll(text);
    parsed.set(name, docs);
    const at = new Date().toISOString();
    const json = JSON.stringify(docs);
    writeSync(
      log,
      `${JSON.stringify({ level: 30, time: Date.now(), file: name, bytes: json.length, msg: 'config file loaded' })}\n`,
    );
    pending.push([name, text, at]);
  }
  window ??= setTimeout(() => {
    window = undefined;
    commit(pending);
    pending = [];
  }, WRITE_WINDOW_MS);
}

function reload(): void {
  load(dirty);
  dirty.clear();
}

load(readdirSync(dir).filter((name) => name.endsWith('.yaml')));
// Portolan's watcher's debounce (config-dir/watcher.ts): a quiet period, but a steady stream of
// writes is applied at most two quiet periods after its first event.
let burstStartedAt = 0;
const watcher = watch(dir, (type, name) => {
  if (type !== 'change' || !name) return;
  dirty.add(name);
  const now = Date.now();
  if (quiet === undefined) burstStartedAt = now;
  clearTimeout(quiet);
  quiet = setTimeout(
    () => {
      quiet = undefined;
      reload();
    },
    Math.min(QUIET_MS, Math.max(0, burstStartedAt + 2 * QUIET_MS - now)),
  );
});

process.on('message', (msg: { cmd?: string }) => {
  if (msg.cmd !== 'close') return;
  watcher.close();
  clearTimeout(quiet);
  clearTimeout(window);
  db.close();
  closeSync(log);
  process.exit(0);
});
process.send?.({ ev: 'ready' });
