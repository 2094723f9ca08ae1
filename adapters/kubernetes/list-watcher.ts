// List + watch of one kind of object in one cluster (client-go's Reflector): a paginated list fills
// the store and gives a resourceVersion; a watch from that resourceVersion applies ADDED, MODIFIED and
// DELETED events and advances it, BOOKMARKs advance it without a change; `410 Gone` (an ERROR event,
// or the HTTP status of a list page or watch) means that version is compacted away, so list again.
// Any other failure is retried with backoff while the store keeps what it had: a failing API server
// never empties it. A relist replaces the store in one step, so only real differences surface.
import type { Logger } from '../../log/logger.js';
import { Backoff, type BackoffOptions } from '../../model/backoff.js';
import type { RecoveryProbe } from '../recovery-probe.js';
import { ConnectionLost, isGone, KubeApiError, statusError, type KubeHttp } from './client.js';
import { KubeObjectError, objectKey, parseMeta } from './api.js';

export interface WatchTiming {
  /** Objects per list page (`limit`; the `continue` token fetches the next page). */
  readonly pageSize: number;
  /** Bound on one list page, and on the wait for a watch's response headers. */
  readonly requestTimeoutMs: number;
  /** A watch asks the server to end it after this long, drawn from [n, 2n) as client-go does. */
  readonly watchTimeoutSeconds: number;
  /** A watch still open this long after its timeoutSeconds is presumed hung and replaced. */
  readonly watchGraceMs: number;
  readonly backoff: BackoffOptions;
}

/** Between retries against a failing API server: 1 s doubling to 30 s, up to 20 % shorter at random. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 30_000, jitter: 0.2 };

export const DEFAULT_TIMING: WatchTiming = {
  pageSize: 500,
  requestTimeoutMs: 30_000,
  watchTimeoutSeconds: 300,
  watchGraceMs: 30_000,
  backoff: DEFAULT_BACKOFF,
};

export interface ListWatcherOptions<T> {
  /** Plural resource name, e.g. `services`. */
  readonly kind: string;
  /** The all-namespaces collection path, e.g. `/api/v1/services`. */
  readonly path: string;
  readonly http: KubeHttp;
  readonly parse: (raw: unknown) => T;
  /** Called with what changed in the store (after a list, or an event that changed an object). */
  readonly onChange: (changes: readonly StoreChange<T>[]) => void;
  /** Called when synced or failing changed. */
  readonly onHealth: () => void;
  /**
   * When the server refuses this kind (403/404: RBAC or an old API server), carry on without it: the
   * watcher counts as synced with an empty store and keeps retrying at the maximum backoff.
   */
  readonly optional?: boolean;
  readonly timing: WatchTiming;
  readonly logger: Logger;
  /** Shared by a cluster's watchers: ends a failure's backoff once the API server answers again. */
  readonly recovery?: RecoveryProbe;
}

export interface ListWatcherDebug {
  readonly resourceVersion: string;
  readonly synced: boolean;
  readonly phase: Phase;
  readonly objects: number;
  readonly lastError?: string;
  readonly lastErrorAt?: string;
  /** Why an optional kind is not being watched. */
  readonly unavailable?: string;
  readonly lists: number;
  readonly relistsAfterGone: number;
  readonly watches: number;
  readonly events: number;
  readonly bookmarks: number;
  /** Objects whose latest version could not be read (the previous version is kept). */
  readonly invalid: Readonly<Record<string, string>>;
}

/** One object's change: `before` absent for an addition, `after` absent for a deletion. */
export interface StoreChange<T> {
  readonly key: string;
  readonly before?: T;
  readonly after?: T;
}

type Phase = 'idle' | 'listing' | 'watching' | 'backoff' | 'stopped';

export class ListWatcher<T> {
  private store = new Map<string, T>();
  private resourceVersion = '';
  private synced = false;
  private phase: Phase = 'idle';
  private failure: { message: string; at: string } | undefined;
  private unavailable: string | undefined;
  private readonly invalid = new Map<string, string>();
  private readonly counts = { lists: 0, relistsAfterGone: 0, watches: 0, events: 0, bookmarks: 0 };
  private readonly backoff: Backoff;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private firstAttempt: { promise: Promise<void>; resolve: () => void };

  constructor(private readonly options: ListWatcherOptions<T>) {
    this.backoff = new Backoff(options.timing.backoff);
    let resolve = (): void => {};
    const promise = new Promise<void>((r) => (resolve = r));
    this.firstAttempt = { promise, resolve };
  }

  get kind(): string {
    return this.options.kind;
  }

  /** Starts the loop; resolves once the first list succeeded or failed (it keeps retrying). */
  async start(): Promise<void> {
    this.running ??= this.run();
    await this.firstAttempt.promise;
  }

  async stop(): Promise<void> {
    this.stopping.abort(new Error('stopped'));
    this.firstAttempt.resolve();
    await this.running;
    this.phase = 'stopped';
  }

  /** The current objects by `namespace/name` (live: events update it, a relist replaces it). */
  objects(): ReadonlyMap<string, T> {
    return this.store;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** The current failure, if the last request failed and none has succeeded since. */
  failing(): { message: string; at: string } | undefined {
    return this.failure;
  }

  debug(): ListWatcherDebug {
    return {
      resourceVersion: this.resourceVersion,
      synced: this.synced,
      phase: this.phase,
      objects: this.store.size,
      ...(this.failure && { lastError: this.failure.message, lastErrorAt: this.failure.at }),
      ...(this.unavailable !== undefined && { unavailable: this.unavailable }),
      ...this.counts,
      invalid: Object.fromEntries(this.invalid),
    };
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    // Consecutive `410 Gone`s without one event in between: relist at once the first time, then back
    // off, so a server that keeps answering 410 is not hammered.
    let goneStreak = 0;
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) await this.list();
        const progressed = await this.watchOnce();
        if (progressed) goneStreak = 0;
        else if (!this.stopped) await this.pause(this.backoff.next());
      } catch (err) {
        if (this.stopped) break;
        if (isGone(err)) {
          this.resourceVersion = '';
          this.counts.relistsAfterGone++;
          this.options.logger.info(
            { kind: this.kind, err: message(err) },
            'resourceVersion expired; relisting',
          );
          if (goneStreak++ === 0) continue;
        }
        if (this.options.optional && isRefused(err)) this.markUnavailable(err);
        else this.recordFailure(err);
        this.firstAttempt.resolve();
        if (this.unavailable !== undefined) await this.pause(this.options.timing.backoff.maxMs);
        else await this.pauseOrRecover(this.backoff.next());
      }
    }
  }

  /** Lists every page, then swaps the store in one step. */
  private async list(): Promise<void> {
    this.phase = 'listing';
    const { http, path, timing } = this.options;
    const next = new Map<string, T>();
    const seen = new Set<string>();
    let token: string | undefined;
    let resourceVersion = '';
    do {
      const page = await http.getJson(
        path,
        { limit: timing.pageSize, continue: token },
        timing.requestTimeoutMs,
        this.stopping.signal,
      );
      const { items, meta } = listBody(page, path);
      resourceVersion = meta.resourceVersion;
      token = meta.continue || undefined;
      for (const raw of items) {
        const key = keyOf(raw);
        if (key !== undefined) seen.add(key);
        this.admit(next, raw, this.store);
      }
    } while (token);
    const changes = diffStores(this.store, next);
    this.store = next;
    for (const key of this.invalid.keys()) if (!seen.has(key)) this.invalid.delete(key);
    this.resourceVersion = resourceVersion;
    this.counts.lists++;
    this.unavailable = undefined;
    this.healthy();
    if (changes.length > 0) this.options.onChange(changes);
  }

  /**
   * One watch from the current resourceVersion, until the server ends it or the watchdog replaces it.
   * Resolves with whether it made progress (events, or ran its course), so a server that ends every
   * watch at once is retried with backoff rather than in a tight loop.
   */
  private async watchOnce(): Promise<boolean> {
    const { http, path, timing } = this.options;
    const timeoutSeconds = Math.floor(timing.watchTimeoutSeconds * (1 + Math.random()));
    const watchdog = new AbortController();
    const timer = setTimeout(
      () => watchdog.abort(new Error('watchdog')),
      timeoutSeconds * 1000 + timing.watchGraceMs,
    );
    const started = Date.now();
    let openedAt: number | undefined;
    let events = 0;
    try {
      await http.watch(
        path,
        { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
        {
          signal: AbortSignal.any([this.stopping.signal, watchdog.signal]),
          headerTimeoutMs: timing.requestTimeoutMs,
          onOpen: () => {
            openedAt = Date.now();
            this.phase = 'watching';
            this.counts.watches++;
            this.healthy();
          },
          onEvent: (type, object) => {
            events++;
            this.apply(type, object);
          },
        },
      );
    } catch (err) {
      // A watch that ran for a while and was cut (an idle proxy, a server restart) is re-opened at
      // once, as client-go does; only if that fails too is the API server failing.
      if (
        err instanceof ConnectionLost &&
        openedAt !== undefined &&
        Date.now() - openedAt >= 1000 &&
        !this.stopped
      ) {
        this.options.logger.debug({ kind: this.kind, err: err.message }, 'watch cut; re-watching');
        return true;
      }
      if (!watchdog.signal.aborted || this.stopped) throw err;
      this.options.logger.warn(
        { kind: this.kind, timeoutSeconds },
        'watch outlived its timeout; replacing it',
      );
      return true;
    } finally {
      clearTimeout(timer);
    }
    return events > 0 || Date.now() - started >= 1000;
  }

  private apply(type: string, raw: unknown): void {
    this.counts.events++;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED': {
        const key = keyOf(raw);
        const before = key === undefined ? undefined : this.store.get(key);
        const changed = this.admit(this.store, raw, this.store);
        this.advance(raw);
        const after = key === undefined ? undefined : this.store.get(key);
        if (changed && key !== undefined && after !== undefined)
          this.options.onChange([{ key, ...(before !== undefined && { before }), after }]);
        return;
      }
      case 'DELETED': {
        const key = keyOf(raw);
        this.advance(raw);
        if (key === undefined) return;
        this.invalid.delete(key);
        const before = this.store.get(key);
        if (before === undefined) return;
        this.store.delete(key);
        this.options.onChange([{ key, before }]);
        return;
      }
      case 'BOOKMARK':
        this.counts.bookmarks++;
        this.advance(raw);
        return;
      case 'ERROR':
        throw statusError(500, raw, `watch ${this.options.path}`);
      default:
        throw new Error(`watch ${this.options.path}: unknown event type ${type}`);
    }
  }

  /**
   * Parses `raw` into `into`. An object that cannot be read keeps its previous version (from
   * `previous`) and is listed as invalid. Returns whether `into` now differs from `previous`.
   */
  private admit(into: Map<string, T>, raw: unknown, previous: ReadonlyMap<string, T>): boolean {
    const key = keyOf(raw);
    if (key === undefined) {
      this.options.logger.warn({ kind: this.kind }, 'an object without metadata.name; ignored');
      return false;
    }
    const before = previous.get(key);
    let parsed: T;
    try {
      parsed = this.options.parse(raw);
      this.invalid.delete(key);
    } catch (err) {
      if (!(err instanceof KubeObjectError)) throw err;
      this.invalid.set(key, err.message);
      this.options.logger.warn(
        { kind: this.kind, object: key, err: err.message },
        'invalid object; keeping its last good version',
      );
      if (before !== undefined) into.set(key, before);
      return false;
    }
    // Unchanged projections keep their identity, so nothing downstream recomputes for them.
    if (before !== undefined && JSON.stringify(before) === JSON.stringify(parsed)) {
      into.set(key, before);
      return false;
    }
    into.set(key, parsed);
    return true;
  }

  private advance(raw: unknown): void {
    try {
      const rv = parseMeta(withName(raw)).resourceVersion;
      if (rv) this.resourceVersion = rv;
    } catch {
      // an event without metadata: nothing to advance to
    }
  }

  private healthy(): void {
    const changed = this.failure !== undefined || !this.synced;
    this.failure = undefined;
    this.synced = true;
    this.backoff.reset();
    this.firstAttempt.resolve();
    if (changed) this.options.onHealth();
  }

  private recordFailure(err: unknown): void {
    const first = this.failure === undefined;
    this.failure = { message: `${this.kind}: ${message(err)}`, at: new Date().toISOString() };
    if (first)
      this.options.logger.warn(
        { kind: this.kind, err: message(err) },
        'list/watch failing; retrying with backoff',
      );
    this.options.onHealth();
  }

  private markUnavailable(err: unknown): void {
    const first = this.unavailable === undefined;
    this.unavailable = message(err);
    this.failure = undefined;
    if (first) {
      this.options.logger.warn(
        { kind: this.kind, err: this.unavailable },
        'not allowed to list this kind; carrying on without it',
      );
      this.synced = true;
      this.options.onHealth();
    }
  }

  /** The backoff after a failure, cut short when the recovery probe sees the API server return. */
  private async pauseOrRecover(ms: number): Promise<void> {
    const recovery = this.options.recovery;
    if (!recovery) return this.pause(ms);
    this.phase = 'backoff';
    await recovery.pause(ms, this.stopping.signal);
  }

  private async pause(ms: number): Promise<void> {
    this.phase = 'backoff';
    const signal = this.stopping.signal;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
  }
}

function listBody(
  page: unknown,
  path: string,
): { items: unknown[]; meta: { resourceVersion: string; continue: string } } {
  if (typeof page !== 'object' || page === null) throw new Error(`GET ${path}: not a list`);
  const { items, metadata } = page as {
    items?: unknown;
    metadata?: { resourceVersion?: unknown; continue?: unknown };
  };
  if (items !== undefined && items !== null && !Array.isArray(items))
    throw new Error(`GET ${path}: items is not a list`);
  const rv = metadata?.resourceVersion;
  if (typeof rv !== 'string' || rv === '') throw new Error(`GET ${path}: the list has no resourceVersion`);
  const token = metadata?.continue;
  return {
    items: items ?? [],
    meta: { resourceVersion: rv, continue: typeof token === 'string' ? token : '' },
  };
}

function diffStores<T>(prev: ReadonlyMap<string, T>, next: ReadonlyMap<string, T>): StoreChange<T>[] {
  const changes: StoreChange<T>[] = [];
  for (const [key, after] of next) {
    const before = prev.get(key);
    if (before !== after) changes.push({ key, ...(before !== undefined && { before }), after });
  }
  for (const [key, before] of prev) if (!next.has(key)) changes.push({ key, before });
  return changes;
}

function keyOf(raw: unknown): string | undefined {
  try {
    return objectKey(parseMeta(raw));
  } catch {
    return undefined;
  }
}

/** A BOOKMARK's object carries only a resourceVersion; give it a name so parseMeta reads it. */
function withName(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null) return raw;
  const metadata = (raw as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null) return raw;
  return { ...raw, metadata: { name: '-', ...metadata } };
}

function isRefused(err: unknown): boolean {
  return err instanceof KubeApiError && (err.code === 403 || err.code === 404);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
