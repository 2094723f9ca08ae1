// POST /debug/diff (`portolan diff`): a candidate of the whole config directory, evaluated as the
// directory would take it (config-dir/candidate.ts), merged with the other registries as the
// aggregate merges them, and previewed per connected proxy (diff/preview.ts). Nothing is applied and
// nothing is sent: the config registry, the catalog in force and the streams are only read.
//
// Bounds: the body (64 MiB, within 30 s), the files (count, size: the directory's limits), the
// whole evaluation (10 s, checked between files and between streams, refused past it), and one
// evaluation at a time: a request while one runs gets 429 at once (a queue would only hold
// connections and memory for answers about a config that is being replaced anyway).
import type { IncomingMessage } from 'node:http';
import {
  CandidateError,
  checkCandidateFiles,
  DEFAULT_CANDIDATE_LIMITS,
  evaluateCandidate,
  overDeadline,
  type CandidateBase,
  type CandidateFile,
  type CandidateLimits,
  type Deadline,
  type EvaluationClock,
} from '../config-dir/candidate.js';
import { REGISTRY_NAME } from '../config-dir/conversion.js';
import type { MeshConfig, MeshSettings } from '../mesh/mesh-config.js';
import { MAX_DIFF_BODY_BYTES, type DiffView } from '../model/admin-api.js';
import type { Catalog } from '../model/catalog.js';
import type { RegistrySnapshot } from '../model/change.js';
import { servingView, type GeneratorLookup } from '../xds/generators/generator.js';
import type { StreamView } from '../xds/server/observer.js';
import { previewStreams, type ClientRejection } from './diff/preview.js';
import { foreignRequest } from './same-origin.js';

export { MAX_DIFF_BODY_BYTES };
/** How long the body may take to arrive: a slow upload does not hold the one evaluation slot. */
const BODY_TIMEOUT_MS = 30_000;

export interface DiffDeps {
  /** The config registry: what a candidate is evaluated against. */
  readonly config: { candidateBase(): CandidateBase };
  /** The aggregate: the catalog with the config registry's snapshot replaced. */
  readonly discovery: { catalogWith(registry: string, snapshot: RegistrySnapshot): Catalog };
  /** The open streams (AdsServer.streamList). */
  readonly streams: () => readonly StreamView[];
  /** The generators without validation wrappers (GeneratorTable(DEFAULT_GENERATORS)). */
  readonly generators: GeneratorLookup;
  /** The serve-wide settings the ADS server's mesh config carries (--path-normalization). */
  readonly meshSettings?: MeshSettings;
  readonly trustDomain?: string;
  readonly limits?: CandidateLimits;
  /** Tests only: the clock of the deadline. */
  readonly clock?: EvaluationClock;
  /** Tests only: the clients' verdicts (default: xds/validate/acceptance.ts clientRejection). */
  readonly rejection?: ClientRejection;
}

export interface DiffResult {
  readonly status: number;
  readonly body: unknown;
}

export class DiffService {
  private running = false;
  private readonly limits: CandidateLimits;

  constructor(private readonly deps: DiffDeps) {
    this.limits = deps.limits ?? DEFAULT_CANDIDATE_LIMITS;
  }

  /** The HTTP request: same-origin checks, the body's bounds, one at a time. */
  async handle(req: IncomingMessage, adminHost: string): Promise<DiffResult> {
    const result = await this.answer(req, adminHost);
    // A body refused unread is discarded (never kept), so the client reads the answer.
    if (!req.readableEnded) req.resume();
    return result;
  }

  private async answer(req: IncomingMessage, adminHost: string): Promise<DiffResult> {
    const refused = foreignRequest(req, adminHost);
    if (refused !== undefined) return { status: 403, body: { error: refused } };
    if (req.method !== 'POST') return error(405, `${req.method ?? ''} not allowed on /debug/diff (POST it)`);
    // As on the mock API's writes: a cross-site form post (sent without a preflight) is refused.
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json')
      return error(415, `content-type: must be application/json, got ${JSON.stringify(type ?? '')}`);
    if (this.running) {
      return error(429, 'another diff is being evaluated; retry when it is done');
    }
    this.running = true;
    try {
      const files = parseBody(await readBody(req));
      checkCandidateFiles(files, this.limits);
      return { status: 200, body: await this.evaluate(files) };
    } catch (err) {
      if (err instanceof CandidateError) return error(err.status, err.message);
      throw err;
    } finally {
      this.running = false;
    }
  }

  /** `files` (checked) as the directory's next version, previewed per connected proxy. */
  async evaluate(files: readonly CandidateFile[]): Promise<DiffView> {
    const clock = this.deps.clock ?? { now: () => Date.now(), pause: pauseOnce };
    const started = clock.now();
    const deadline: Deadline = { at: started + this.limits.deadlineMs, limitMs: this.limits.deadlineMs };
    const candidate = await evaluateCandidate(files, this.deps.config.candidateBase(), deadline, clock);
    const catalog = this.deps.discovery.catalogWith(REGISTRY_NAME, candidate.snapshot);
    const view = servingView({
      catalog,
      config: withSettings(candidate.meshConfig, this.deps.meshSettings),
      ...(this.deps.trustDomain && { trustDomain: this.deps.trustDomain }),
    });
    let sliceStart = clock.now();
    const preview = await previewStreams(this.deps.streams(), view, this.deps.generators, {
      ...(this.deps.rejection && { rejection: this.deps.rejection }),
      checkpoint: async () => {
        const now = clock.now();
        if (now > deadline.at) throw overDeadline(deadline);
        if (now - sliceStart < 10) return;
        await clock.pause();
        sliceStart = clock.now();
      },
    });
    return {
      proxies: preview.proxies,
      problems: [...candidate.problems, ...preview.problems],
      evaluatedMs: Math.round(clock.now() - started),
    };
  }
}

/** The ADS server's mesh config carries the serve-wide settings (mesh/mesh-config.ts withMeshSettings). */
function withSettings(config: MeshConfig, settings: MeshSettings | undefined): MeshConfig {
  return settings?.pathNormalization === undefined ? config : Object.freeze({ ...config, ...settings });
}

function pauseOnce(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

function error(status: number, message: string): DiffResult {
  return { status, body: { error: message } };
}

/** The body, at most MAX_DIFF_BODY_BYTES within BODY_TIMEOUT_MS; past either, what is left is discarded. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_DIFF_BODY_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  const timer = setTimeout(() => req.destroy(new Error('timeout')), BODY_TIMEOUT_MS);
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      // Read to the end (so the client reads the answer) without keeping it.
      if (size > MAX_DIFF_BODY_BYTES) over = true;
      else chunks.push(chunk as Buffer);
    }
  } catch {
    throw new CandidateError(400, `body: not received within ${BODY_TIMEOUT_MS / 1000} s`);
  } finally {
    clearTimeout(timer);
  }
  if (over) throw tooLarge();
  return Buffer.concat(chunks);
}

function tooLarge(): CandidateError {
  return new CandidateError(413, `body: larger than ${MAX_DIFF_BODY_BYTES / (1024 * 1024)} MiB`);
}

/** `{"files":[{"path","content"}]}`, checked field by field. */
function parseBody(bytes: Buffer): CandidateFile[] {
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new CandidateError(400, `body: invalid JSON: ${(err as Error).message}`);
  }
  if (!isRecord(body) || !Array.isArray(body.files))
    throw new CandidateError(400, 'body: must be {"files":[{"path":"…","content":"…"}]}');
  return body.files.map((f: unknown, i) => {
    if (!isRecord(f) || typeof f.path !== 'string' || typeof f.content !== 'string')
      throw new CandidateError(400, `files[${i}]: must be {"path": string, "content": string}`);
    return { path: f.path, content: f.content };
  });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
