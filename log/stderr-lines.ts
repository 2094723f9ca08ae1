// JSON log lines to stderr. Each line is written as it is logged until the process says it is up
// (batchLogWrites()), and again once it is shutting down. In between, info and debug lines are
// gathered and written together at most LOG_FLUSH_MS later (or once BATCH_BYTES have gathered);
// a warning or error is written at once, with whatever waits before it; and everything still
// waiting is written when the process exits. Every JSON logger of the process shares the one
// destination, so lines keep their order whichever logger wrote them.
//
// Why: stderr is a pipe or socket (journald, a supervisor, a test), and a write to one wakes its
// reader; under steady edits, one such write per edit cost about 0.3 ms of server CPU, more than
// parsing the edited file (docs/benchmarks.md, "CPU per change").
import { destination, type DestinationStream, type LoggerOptions } from 'pino';

export const LOG_FLUSH_MS = 1000;
const BATCH_BYTES = 8192;

/** What sonic-boom (pino.destination) keeps as a plain field and reads on every write. */
interface Batchable {
  minLength: number;
  flushSync(): void;
}

interface StderrLines {
  readonly stream: DestinationStream;
  readonly hooks: LoggerOptions['hooks'];
  readonly batchable: Batchable;
}

let shared: StderrLines | undefined;

/** The process's stderr destination, and the pino hooks that write a warning or error at once. */
export function stderrLines(): StderrLines {
  if (shared) return shared;
  const sonic = destination({ fd: 2, sync: true, periodicFlush: LOG_FLUSH_MS });
  const batchable = sonic as unknown as Batchable;
  process.once('exit', () => batchable.flushSync());
  shared = {
    stream: sonic,
    batchable,
    hooks: {
      logMethod(args, method, level) {
        method.apply(this, args);
        if (level >= 40) batchable.flushSync();
      },
    },
  };
  return shared;
}

/**
 * The process is up: from now on, write info and debug lines in batches. `false` (shutting down):
 * write what waits, and every line at once again.
 */
export function batchLogWrites(batch = true): void {
  if (!shared) return;
  shared.batchable.minLength = batch ? BATCH_BYTES : 0;
  if (!batch) shared.batchable.flushSync();
}
