// A test process that dies before its `after` hooks — an uncaught error, or the runner's SIGTERM
// when a file runs past its time limit — must not leave servers behind. Every child registered here
// is SIGKILLed by its pid as the process goes; on a signal, the process then dies of that signal.
import type { ChildProcess } from 'node:child_process';

const children = new Set<ChildProcess>();

/** Kills `child` if this process exits first; forgotten once the child exits. */
export function killOnExit(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

function killAll(): void {
  for (const child of children) {
    try {
      if (child.pid && child.exitCode === null && child.signalCode === null)
        process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    process.kill(process.pid, signal);
  });
}
