// The Node.js flags Portolan runs under. They are written once, in cli/main.ts's first line
// (`#!/usr/bin/env -S node …`, what an installed `portolan` and `npm start` run through), and read
// from there by whatever starts `portolan serve` with node itself (test/support/portolan-process.ts,
// the benchmarks). V8 reads these at start, so setting them from inside the process
// (v8.setFlagsFromString) comes too late.
//
// --no-memory-reducer: the memory reducer runs full garbage collections when allocation slows down,
// to hand memory back from an idle browser tab. A control plane's heap is mostly its long-lived
// catalog, so they free little; but under light steady work (a config edit every few seconds) they
// came back every few seconds, three full collections at a time: 60–150 ms of CPU, more than the
// edits themselves (docs/benchmarks.md, "CPU per change"). Ordinary collections still run as the
// heap grows.
//
// --min-semi-space-size=8 (MiB): V8 shrinks the young generation to 1 MiB when allocation slows, and
// then scavenges after every few edits (16 scavenges in 80 edits at 5 a second, against 2 with 8
// MiB), each scanning the large old heap's pointers into the young one. 8 MiB is half the default
// maximum, so a busy server's young generation is what it was.
//
// --heap-growing-percent=100: after a full collection V8 sets the next one's threshold at the live
// heap times a factor it picks from how fast collecting was against allocating, between 1.1 and 4.
// A control plane's live heap is mostly its catalog and is quick to mark, so V8 often picks the low
// end, and a reconnect storm (2,000 new streams promote tens of MB through the young generation)
// then triggered a full collection in nearly every storm: 6 of 7 against 2 of 7 with the factor held
// at 2, and 55 against 41 µs of CPU per response (docs/benchmarks.md, 2026-11-29). The heap may
// grow to twice its live size before the next full collection; --max-old-space-size still bounds it.
// That left a storm's garbage in the heap long after the storm: hence --expose-gc, for the one
// collection cli/settle-collector.ts runs once the process is idle again after the heap grew a lot
// (never during a storm, never for light steady work).
//
// Compaction: a storm promotes its garbage interleaved with the streams' long-lived state, so after
// a full collection the old generation's pages are sparse, and V8's own heuristics evacuate few of
// them. The settle collection asks for compaction for itself only (cli/settle-collector.ts), so the
// full collections V8 starts in a storm stay as cheap as V8 makes them.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const NODE_FLAGS: readonly string[] = flagsOf(
  readFileSync(fileURLToPath(new URL('./main.js', import.meta.url)), 'utf8'),
);

/** The node flags of a `#!/usr/bin/env -S node FLAGS…` first line. */
export function flagsOf(source: string): string[] {
  const shebang = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)\s*$/m.exec(
    source.split('\n')[0] ?? '',
  );
  if (!shebang) throw new Error('cli/main.ts must start with #!/usr/bin/env -S node FLAGS…');
  return (shebang[1] ?? '').trim().split(/\s+/).filter(Boolean);
}
