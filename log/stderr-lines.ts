// JSON log lines to stderr. Each line is written as it is logged until the process says it is up
// (batchLogWrites()), and again once it is shutting down; in between info and debug lines are gathered and written together at most
// LOG_FLUSH_MS later (or once BATCH_BYTES have gathered), warnings and errors at once with whatever
// waits before them, and everything still waiting when the process exits.
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

const streams = new Set<Batchable>();

/** A stderr destination, and the pino hooks that write a warning or error at once. */
export function stderrLines(): { stream: DestinationStream; hooks: LoggerOptions['hooks'] } {
  const sonic = destination({ fd: 2, sync: true, periodicFlush: LOG_FLUSH_MS });
  const stream = sonic as unknown as Batchable;
  streams.add(stream);
  process.once('exit', () => stream.flushSync());
  return {
    stream: sonic,
    hooks: {
      logMethod(args, method, level) {
        method.apply(this, args);
        if (level >= 40) stream.flushSync();
      },
    },
  };
}

/**
 * The process is up: from now on, write info and debug lines in batches. `false` (shutting down):
 * write what waits, and every line at once again.
 */
export function batchLogWrites(batch = true): void {
  for (const stream of streams) {
    stream.minLength = batch ? BATCH_BYTES : 0;
    if (!batch) stream.flushSync();
  }
}
