// The cost of a traffic config edit as the config grows: `portolan serve --config-dir D` (a child
// process) with N services and N DestinationRules (one file each, rule-i.yaml for svc-i), no stream
// connected; one rule file rewritten 10 times a second for 10 s (rule-(k mod 200), a new circuit
// breaker value each time), at N = 1,000 and 10,000. Reports the server's CPU per edit (whole process
// and main thread, the idle rate subtracted: bench/load/file-churn.ts), the 10,000 / 1,000 ratio and
// bytes allocated per edit (scavenges × the young generation). What it isolates: the config path of a
// rule edit (read, validate, the traffic config put together, the step's keys, the mesh index, the
// push that finds nothing to send), which must cost what the edit touched, not what the config holds.
// RULE_EDITS_SIZES=1000,10000 (default); PORTOLAN_BENCH_PROFILE=DIR profiles each server.
import { editsOf, churnFiles, type ChurnOutcome, type EditTarget } from './load/file-churn.js';
import { startConfigDirPortolan } from './load/service-files.js';
import { printTable } from './table.js';

const RATE = 10;
const SECONDS = 10;
const FILES = 200;
/** Changes made first and not counted: V8 compiles the edit path over the first hundred or so. */
const WARM = 300;
const ROUNDS = 3;
const SIZES = (process.env.RULE_EDITS_SIZES ?? '1000,10000')
  .split(',')
  .map(Number)
  .filter((n) => n >= FILES);

interface SizeRun {
  readonly size: number;
  readonly rounds: readonly ChurnOutcome[];
}

async function runAt(size: number): Promise<SizeRun> {
  const server = await startConfigDirPortolan(size, undefined, [], undefined, size);
  try {
    const target: EditTarget = editsOf(server);
    // Change seq rewrites rule-(seq mod FILES) with a value no earlier change wrote to it.
    let base = 0;
    await churnFiles(
      target,
      [],
      WARM,
      20,
      (seq) => seq % FILES,
      0,
      (seq) => server.writeRule(seq % FILES, 2 + seq),
    );
    base += WARM;
    const rounds: ChurnOutcome[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const offset = base;
      rounds.push(
        await churnFiles(
          target,
          [],
          RATE * SECONDS,
          RATE,
          (seq) => seq % FILES,
          0,
          (seq) => server.writeRule(seq % FILES, 2 + offset + seq),
        ),
      );
      base += RATE * SECONDS;
    }
    return { size, rounds };
  } finally {
    await server.stop();
  }
}

const ms = (n: number): string => `${n.toFixed(2)} ms`;
const median = (xs: readonly number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export async function ruleEdits(): Promise<void> {
  const runs: SizeRun[] = [];
  for (const size of SIZES) runs.push(await runAt(size));
  const rows = runs.map((run) => {
    const whole = run.rounds.map((r) => r.cpuMsPerChange);
    const main = run.rounds.map((r) => r.mainMsPerChange);
    const alloc = run.rounds.map((r) => (r.gc?.allocatedPerChange ?? NaN) / 2 ** 20);
    return {
      'services = rules': String(run.size),
      'CPU per edit, whole process: median (rounds)': `${ms(median(whole))} (${whole.map(ms).join(', ')})`,
      'main thread: median': ms(median(main)),
      'allocated per edit ≈ (rounds)': alloc.map((a) => `${a.toFixed(2)} MiB`).join(', '),
      'collections (scavenges / full)': run.rounds
        .map((r) => `${r.gc?.scavenges ?? '?'}/${r.gc?.full ?? '?'}`)
        .join(', '),
    };
  });
  const [small, large] = runs;
  if (small && large) {
    const m = (run: SizeRun): number => median(run.rounds.map((r) => r.cpuMsPerChange));
    rows.push({
      'services = rules': `ratio ${large.size} / ${small.size}`,
      'CPU per edit, whole process: median (rounds)': `${(m(large) / m(small)).toFixed(2)} ×`,
      'main thread: median': `${(median(large.rounds.map((r) => r.mainMsPerChange)) / median(small.rounds.map((r) => r.mainMsPerChange))).toFixed(2)} ×`,
      'allocated per edit ≈ (rounds)': '',
      'collections (scavenges / full)': '',
    });
  }
  printTable(
    `rule-edits: one DestinationRule file rewritten ${RATE}/s for ${SECONDS} s × ${ROUNDS} rounds after ${WARM} warm-up edits, no streams; ${new Date().toISOString()}`,
    rows,
  );
}
