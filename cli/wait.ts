// `portolan wait`: has the config change just made reached every proxy it concerns? First the config
// directory takes in everything on disk (POST /debug/config_sync, so a write made just before, still
// in its debounce, is covered), then /debug/waitz is polled for that config generation until it was
// pushed and every proxy it changed something for ACKed it (exit 0), one NACKed it (exit 1), or the
// timeout, counted from the start, passed (exit 2). A deploy script gates on the exit code.
import { Option, type Command } from 'commander';
import type { ConfigSyncView, WaitzView } from '../model/admin-api.js';
import { durationMs } from '../model/duration.js';
import { AdminError, getJson, postJson } from './admin-client.js';
import { OptionError } from '../adapters/option-values.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { humanDuration } from './table.js';

export type WaitOutcome = 'synced' | 'nack' | 'timeout' | 'error';

/** What `-o json` prints: one object, the same keys for every outcome. */
export interface WaitReport {
  readonly result: WaitOutcome;
  /** The config generation waited for; null when the control plane could not be asked. */
  readonly generation: number | null;
  /** Proxies the generation changed something for (all SYNCED on `synced`). */
  readonly proxies: number;
  readonly elapsedMs: number;
  readonly nacks: readonly { id: string; type: string; name?: string; message: string }[];
  readonly pending: readonly { id: string; types: readonly string[] }[];
  /** Only on `error`: why the control plane could not be asked. */
  readonly error?: string;
}

export interface WaitOptions {
  readonly httpAddr: string;
  readonly timeoutMs: number;
  readonly format: 'text' | 'json';
  /** Between two polls of /debug/waitz (the issue allows 100–250 ms). */
  readonly pollMs?: number;
}

export interface WaitResult {
  readonly output: string;
  readonly exitCode: 0 | 1 | 2;
  readonly report: WaitReport;
}

export const WAIT_TIMEOUT_DEFAULT = '60s';
const POLL_MS = 150;
/** The longest one poll may take, however much of the overall timeout is left. */
const CALL_MS = 5000;
/** The longest config_sync may take: the server gives up at 15 s (admin/config-sync.ts) with a 503. */
const SYNC_CALL_MS = 20_000;

export async function waitForConfig(options: WaitOptions): Promise<WaitResult> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const elapsed = (): number => Date.now() - started;
  // Each call ends by the overall deadline: a hung control plane is a timeout, not a hang.
  const callMs = (limit = CALL_MS): number => Math.max(1, Math.min(limit, deadline - Date.now()));
  let generation: number | null = null;
  let last: WaitzView | undefined;
  try {
    generation = (
      await postJson<ConfigSyncView>(options.httpAddr, '/debug/config_sync', {}, callMs(SYNC_CALL_MS))
    ).generation;
    for (;;) {
      last = await getJson<WaitzView>(options.httpAddr, `/debug/waitz?generation=${generation}`, callMs());
      const decided = decide(last);
      if (decided) return finish(options.format, { ...decided, generation, elapsedMs: elapsed() });
      const left = deadline - Date.now();
      if (left <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs ?? POLL_MS, left)));
      if (Date.now() >= deadline) break;
    }
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    // A call cut short by the deadline is the timeout; any other failure is an unreachable server.
    if (Date.now() < deadline) {
      return finish(options.format, {
        result: 'error',
        generation,
        proxies: 0,
        elapsedMs: elapsed(),
        nacks: [],
        pending: [],
        error: err.message,
      });
    }
  }
  const pending = (last?.proxies ?? []).filter((p) => p.state !== 'SYNCED');
  return finish(options.format, {
    result: 'timeout',
    generation,
    proxies: last?.proxies.length ?? 0,
    elapsedMs: elapsed(),
    nacks: [],
    pending: pending.map((p) => ({ id: p.id, types: p.pending })),
  });
}

/** Synced or NACKed, or undefined while it is still pending. A NACK decides at once. */
export function decide(
  view: WaitzView,
): Pick<WaitReport, 'result' | 'proxies' | 'nacks' | 'pending'> | undefined {
  const nacks = view.proxies.flatMap((p) =>
    p.state === 'NACK' && p.nack
      ? [
          {
            id: p.id,
            type: p.nack.type,
            ...(p.nack.name ? { name: p.nack.name } : {}),
            message: p.nack.message,
          },
        ]
      : [],
  );
  if (nacks.length > 0) return { result: 'nack', proxies: view.proxies.length, nacks, pending: [] };
  if (view.pushed && view.proxies.every((p) => p.state === 'SYNCED'))
    return { result: 'synced', proxies: view.proxies.length, nacks: [], pending: [] };
  return undefined;
}

const EXIT: Readonly<Record<WaitOutcome, 0 | 1 | 2>> = { synced: 0, nack: 1, timeout: 2, error: 2 };

function finish(format: 'text' | 'json', r: WaitReport): WaitResult {
  // One key order for every outcome, whatever order the report was put together in.
  const report: WaitReport = {
    result: r.result,
    generation: r.generation,
    proxies: r.proxies,
    elapsedMs: r.elapsedMs,
    nacks: r.nacks,
    pending: r.pending,
    ...(r.error !== undefined && { error: r.error }),
  };
  const output = format === 'json' ? `${JSON.stringify(report)}\n` : text(report);
  return { output, exitCode: EXIT[report.result], report };
}

export function text(r: WaitReport): string {
  const took = humanDuration(r.elapsedMs);
  const gen = r.generation === null ? '' : ` (config generation ${r.generation})`;
  const proxies = `${r.proxies} ${r.proxies === 1 ? 'proxy' : 'proxies'}`;
  switch (r.result) {
    case 'synced':
      return r.proxies === 0
        ? `synced: no connected proxy is concerned by the change (${took})${gen}\n`
        : `synced: ${proxies} ACKed the change in ${took}${gen}\n`;
    case 'nack':
      return (
        `NACK: ${r.nacks.length} of ${proxies} rejected the change${gen}\n` +
        r.nacks
          .map((n) => `  ${n.id} rejected ${n.type}${n.name ? ` ${n.name}` : ''}: ${n.message}\n`)
          .join('')
      );
    case 'timeout':
      return (
        `timeout after ${took}: ${r.pending.length} of ${proxies} still pending${gen}\n` +
        r.pending.map((p) => `  ${p.id}${p.types.length ? ` (${p.types.join(', ')})` : ''}\n`).join('') +
        (r.pending.length > 0
          ? ''
          : r.generation === null
            ? '  (the config directory had not taken in the change yet)\n'
            : '  (the push of this generation was not handed out to every stream yet)\n')
      );
    case 'error':
      return `error: ${r.error ?? 'the control plane could not be asked'}\n`;
  }
}

/** `portolan wait` on the command line: exit 0 synced, 1 NACK, 2 timeout, usage error or no answer. */
export function addWaitCommand(program: Command): void {
  program
    .command('wait')
    .description(
      'Wait until the config directory took in every change on disk and every proxy that change concerns ACKed it. Exits 0 when synced, 1 as soon as a proxy NACKs it (naming the proxy, type and message), 2 at the timeout (naming the proxies still pending), on a usage error or when the control plane cannot be reached.',
    )
    .option(
      '--timeout <duration>',
      'give up after this long, counted from the start (20s, 500ms)',
      WAIT_TIMEOUT_DEFAULT,
    )
    .option('--http-addr <host:port>', 'the admin address portolan serve listens on', SERVE_DEFAULTS.httpAddr)
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    // Scripts tell "not synced" (1) from "could not tell" (2): commander's usage errors exit 1 otherwise.
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
    .action(async (opts: { timeout: string; httpAddr: string; output: 'text' | 'json' }, cmd: Command) => {
      const timeoutMs = parseTimeout(opts.timeout);
      if (timeoutMs === undefined)
        cmd.error(`error: --timeout: expected a duration like 20s or 500ms, got "${opts.timeout}"`, {
          exitCode: 2,
        });
      let result: WaitResult;
      try {
        result = await waitForConfig({ httpAddr: opts.httpAddr, timeoutMs, format: opts.output });
      } catch (err) {
        // A bad --http-addr (cli/admin-client.ts adminBase) is a usage error too.
        if (err instanceof OptionError) cmd.error(`error: ${err.message}`, { exitCode: 2 });
        throw err;
      }
      process.stdout.write(result.output);
      process.exitCode = result.exitCode;
    });
}

/** A positive duration (`20s`, `500ms`, `1m30s`), else undefined. */
export function parseTimeout(text: string): number | undefined {
  const ms = durationMs(text.trim());
  return ms === undefined || ms <= 0 ? undefined : ms;
}
