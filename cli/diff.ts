// `portolan diff --config-dir DIR`: what each connected proxy would be sent if DIR were the running
// control plane's config directory, without applying anything. The candidate's files are read here
// (candidate-files.ts: bounded, nothing outside DIR) and evaluated by the server (POST /debug/diff),
// which holds the registries and knows the proxies connected now.
//
// Exit codes are the deploy script's contract (issue #47): 0 when every file is valid and no proxy
// is known to reject the result, 1 when a file is invalid or a proxy would reject what it would be
// sent, 2 on a usage error (an unknown flag included) or a control plane that cannot be reached or
// refuses the request.
import { setTimeout as sleep } from 'node:timers/promises';
import { Option, type Command, type CommanderError } from 'commander';
import type { DiffFileProblem, DiffView } from '../model/admin-api.js';
import { AdminError, adminBase } from './admin-client.js';
import { CandidateError, diffRequestBody, readCandidate } from './candidate-files.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { cliErrors } from './cli-errors.js';

type DiffProblem = DiffView['problems'][number];

export type DiffFormat = 'text' | 'json';

export interface DiffResult {
  readonly output: string;
  readonly exitCode: 0 | 1;
}

/** The server evaluates in bounded time (10 s); this covers waits for other diffs, and the upload. */
const DIFF_TIMEOUT_MS = 60_000;
/** The server evaluates one diff at a time and answers 429 meanwhile: asked again this often. */
const BUSY_RETRY_MS = 200;

export async function diff(configDir: string, httpAddr: string, format: DiffFormat): Promise<DiffResult> {
  const base = adminBase(httpAddr);
  const candidate = await readCandidate(configDir);
  const view = await postDiff(base, httpAddr, diffRequestBody(candidate.files), Date.now() + DIFF_TIMEOUT_MS);
  // Files that could not be sent (unreadable, too large, a link out of DIR) come first, as the
  // server's own file problems do.
  const problems = [...candidate.problems, ...view.problems].sort(
    (a, b) => rank(a) - rank(b) || ('file' in a && 'file' in b ? byFile(a, b) : 0),
  );
  const result: DiffView = { ...view, problems };
  return {
    output: format === 'json' ? `${JSON.stringify(result, null, 2)}\n` : formatDiff(result),
    exitCode: problems.length > 0 ? 1 : 0,
  };
}

const rank = (p: DiffProblem): number => ('file' in p ? 0 : 1);
const byFile = (a: DiffFileProblem, b: DiffFileProblem): number =>
  a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line;

/**
 * Per affected proxy its node id, then one `+`, `-` or `~` line per resource (indented two), each
 * `~` followed by its diff (indented four); then the problems.
 */
export function formatDiff(view: DiffView): string {
  const lines: string[] = [];
  for (const proxy of view.proxies) {
    lines.push(proxy.id);
    for (const c of proxy.changes) {
      lines.push(`  ${OP_MARK[c.op]} ${c.type} ${c.name}`);
      if (c.op === 'change') for (const d of diffLines(c.diff)) lines.push(`    ${d}`);
    }
  }
  if (view.proxies.length === 0)
    lines.push('no changes: no connected proxy would be sent anything different');
  if (view.problems.length === 0) lines.push('problems: none');
  else {
    lines.push('problems:');
    for (const p of view.problems) lines.push(`  ${problemLine(p)}`);
  }
  const n = view.proxies.length;
  // An older server's answer may lack the figure.
  const took = typeof view.evaluatedMs === 'number' ? `, evaluated in ${view.evaluatedMs} ms` : '';
  lines.push(`${n} ${n === 1 ? 'proxy' : 'proxies'} affected${took}; nothing applied`);
  return `${lines.join('\n')}\n`;
}

const OP_MARK = { add: '+', remove: '-', change: '~' } as const;

function diffLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

export function problemLine(p: DiffProblem): string {
  if ('file' in p) return `${p.line > 0 ? `${p.file}:${p.line}` : p.file}: ${p.message}`;
  return `proxy ${p.proxy} ${p.type} ${p.name}: ${p.message}`;
}

async function postDiff(base: string, httpAddr: string, body: string, deadline: number): Promise<DiffView> {
  const url = `${base}/debug/diff`;
  for (;;) {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw new AdminError(
        `cannot reach the Portolan admin API at ${base} (${cause === 'TimeoutError' ? `no answer within ${DIFF_TIMEOUT_MS} ms` : cause}): is portolan serve running with --http-addr ${httpAddr}?`,
      );
    }
    const text = await res.text();
    // Another diff is being evaluated (a CI run beside this one, say): wait for it, within the deadline.
    if (res.status === 429 && Date.now() + BUSY_RETRY_MS < deadline) {
      await sleep(BUSY_RETRY_MS);
      continue;
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text) as unknown;
    } catch {
      throw new AdminError(`${url} answered ${res.status} with something that is not JSON`);
    }
    if (!res.ok) {
      const message = (answer as { error?: unknown } | null)?.error;
      throw new AdminError(
        `${url} answered ${res.status}${typeof message === 'string' ? `: ${message}` : ''}`,
      );
    }
    if (!isDiffView(answer)) throw new AdminError(`${url} answered with something that is not a diff`);
    return answer;
  }
}

function isDiffView(v: unknown): v is DiffView {
  if (typeof v !== 'object' || v === null) return false;
  const { proxies, problems } = v as { proxies?: unknown; problems?: unknown };
  return (
    Array.isArray(proxies) &&
    Array.isArray(problems) &&
    proxies.every(
      (p: { id?: unknown; changes?: unknown } | null) =>
        typeof p?.id === 'string' && Array.isArray(p.changes),
    )
  );
}

/** A command-line error exits 2, commander's own (an unknown flag, a missing one) included. */
function usageExit(err: CommanderError): never {
  process.exit(err.exitCode === 0 ? 0 : 2);
}

export function addDiffCommand(program: Command): void {
  program
    .command('diff')
    .description(
      'Preview a config change: evaluate DIR as the whole next version of the config directory against the running control plane and the proxies connected now, and print per proxy what it would be sent differently. Nothing is applied. Exits 1 when a file is invalid or a proxy would reject the result, 2 on a usage error or an unreachable control plane.',
    )
    .requiredOption(
      '--config-dir <dir>',
      'the candidate config directory (a checkout of the next commit, say)',
    )
    .option('--http-addr <host:port>', 'the admin address portolan serve listens on', SERVE_DEFAULTS.httpAddr)
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .exitOverride(usageExit)
    .action((opts: { configDir: string; httpAddr: string; output: DiffFormat }, cmd: Command) =>
      cliErrors(cmd, async () => {
        try {
          const result = await diff(opts.configDir, opts.httpAddr, opts.output);
          process.stdout.write(result.output);
          process.exitCode = result.exitCode;
        } catch (err) {
          // The candidate as a whole cannot be evaluated: the change is at fault, not the call.
          if (err instanceof CandidateError) {
            process.stderr.write(`error: ${err.message}\n`);
            process.exitCode = 1;
            return;
          }
          if (err instanceof AdminError) {
            process.stderr.write(`error: ${err.message}\n`);
            process.exitCode = 2;
            return;
          }
          throw err;
        }
      }),
    );
}
