// NACK marks of /debug/configz (issue 47 item 3): for every connected proxy whose NACK is in force on
// a type (syncz.ts typeSync: the last response sent was rejected), the config files the rejected
// resources were generated from, with the proxy's node id, client, the type and the NACK message.
// Computed from the streams as they are at each request, so a mark goes by itself when the proxy
// ACKs a later version or disconnects.
//
// From resources to files: the resource cache keeps what each build read (nack-origins.ts: the
// Services, endpoints and traffic rules of hostnames, config kinds read as a whole); here those keys
// are matched to the resources of the config directory in force and so to their files. Two
// narrowings keep the mark on the cause rather than on everything the type read:
//   - a NACK message naming resources the proxy was sent (clients name the one they reject) leaves
//     only those resources;
//   - of the files found, those loaded since the proxy last ACKed the type (the change it rejected)
//     are kept, when there are any.
import type { ConfigDebugState } from '../config-dir/debug-state.js';
import { hostMatches, resolveHost } from '../mesh/hosts.js';
import { MESH_KIND_LISTS } from '../mesh/config-kinds.js';
import type { AnyConfigResource } from '../mesh/types.js';
import type { NackMarkView } from '../model/admin-api.js';
import type { ReadSet } from '../xds/generators/generator.js';
import { shortTypeName } from '../xds/proto/type-urls.js';
import type { SentOrigin } from '../xds/server/nack-origins.js';
import type { StreamView } from '../xds/server/observer.js';
import { typeSync } from './syncz.js';

/** What the marks are computed from: the ADS server (AdsServer.streamList, AdsServer.sentOrigins). */
export interface NackOriginSource {
  streamList(): readonly StreamView[];
  sentOrigins(stream: StreamView, typeUrl: string): readonly SentOrigin[];
}

/** Bounds: a NACK of a type that read everything must not list every file of a large directory. */
export const MAX_FILES_PER_NACK = 50;
export const MAX_MARKS = 1000;

export function nackMarks(state: ConfigDebugState, source: NackOriginSource): NackMarkView[] {
  let files: FileIndex | undefined; // built only when some NACK is in force
  const marks: NackMarkView[] = [];
  for (const stream of source.streamList()) {
    const proxy = stream.proxy;
    if (!proxy) continue;
    for (const t of stream.typeStatus()) {
      const nack = t.nack;
      if (!nack || typeSync(t).state !== 'NACK') continue;
      const origins = source.sentOrigins(stream, t.typeUrl);
      const named = origins.filter((o) => namesResource(nack.message, o.name));
      files ??= new FileIndex(state);
      const found = new Set<string>();
      for (const o of named.length > 0 ? named : origins) files.read(o.reads, found);
      const since = t.acked?.at;
      const recent = since === undefined ? [] : [...found].filter((f) => files?.loadedAfter(f, since));
      const chosen = (recent.length > 0 ? recent : [...found]).sort().slice(0, MAX_FILES_PER_NACK);
      for (const file of chosen)
        marks.push({
          file,
          node: proxy.id,
          client: proxy.userAgent,
          clientVersion: proxy.userAgentVersion,
          type: shortTypeName(t.typeUrl),
          ...(named.length === 1 && { name: (named[0] as SentOrigin).name }),
          message: nack.message,
          generation: t.nackGeneration ?? null,
        });
    }
  }
  marks.sort((a, b) => cmp(a.file, b.file) || cmp(a.node, b.node) || cmp(a.type, b.type));
  return marks.slice(0, MAX_MARKS);
}

/**
 * Whether `message` names the resource `name`: the name appears with no name character on either
 * side, so a route named `80` is not found in `8080`.
 */
export function namesResource(message: string, name: string): boolean {
  if (name === '') return false;
  for (let at = message.indexOf(name); at >= 0; at = message.indexOf(name, at + 1)) {
    const before = message[at - 1];
    const after = message[at + name.length];
    if (!isNameChar(before) && !isNameChar(after)) return true;
  }
  return false;
}

function isNameChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_.|~-]/.test(c);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The config directory in force, by the keys a build reads. */
class FileIndex {
  /** Hostname → files of the ServiceEntries that define it (services and endpoints). */
  private readonly serviceFiles = new Map<string, Set<string>>();
  /** Resolved hostname → files of the VirtualServices and DestinationRules for it. */
  private readonly ruleFiles = new Map<string, Set<string>>();
  /** VirtualServices with a wildcard host: matched against each host looked up. */
  private readonly wildcardRules: { readonly pattern: string; readonly file: string }[] = [];
  private readonly kindFiles = new Map<string, Set<string>>();
  private readonly loadedAt = new Map<string, string>();

  constructor(state: ConfigDebugState) {
    for (const f of state.files) if (f.loadedAt) this.loadedAt.set(f.path, f.loadedAt);
    const r = state.resources;
    for (const se of r.serviceEntries) for (const h of se.spec.hosts) add(this.serviceFiles, h, se.file);
    for (const vs of r.virtualServices)
      for (const h of vs.spec.hosts) {
        const host = resolveHost(h, vs.namespace);
        if (host.startsWith('*')) this.wildcardRules.push({ pattern: host, file: vs.file });
        else add(this.ruleFiles, host, vs.file);
      }
    for (const dr of r.destinationRules)
      add(this.ruleFiles, resolveHost(dr.spec.host, dr.namespace), dr.file);
    for (const list of MESH_KIND_LISTS) {
      const resources: readonly AnyConfigResource[] = r[list];
      for (const resource of resources) add(this.kindFiles, list, resource.file);
    }
  }

  /** Adds to `out` the files of what `reads` names. */
  read(reads: ReadSet, out: Set<string>): void {
    for (const h of reads.services) addAll(out, this.serviceFiles.get(h));
    for (const h of reads.endpoints) addAll(out, this.serviceFiles.get(h));
    if (reads.allServices || reads.allEndpoints)
      for (const files of this.serviceFiles.values()) addAll(out, files);
    for (const h of reads.rules) {
      addAll(out, this.ruleFiles.get(h));
      for (const w of this.wildcardRules) if (hostMatches(w.pattern, h)) out.add(w.file);
    }
    for (const k of reads.kinds) addAll(out, this.kindFiles.get(k));
  }

  /** Whether the version of `file` in force was loaded after `at` (ISO times of this process). */
  loadedAfter(file: string, at: string): boolean {
    const loaded = this.loadedAt.get(file);
    return loaded !== undefined && Date.parse(loaded) > Date.parse(at);
  }
}

function add(map: Map<string, Set<string>>, key: string, file: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(file);
}

function addAll(out: Set<string>, from: ReadonlySet<string> | undefined): void {
  if (from) for (const f of from) out.add(f);
}
