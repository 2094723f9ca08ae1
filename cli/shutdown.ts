// Shutdown with a deadline. `portolan serve` stops in steps (the CA, the gRPC server, the admin
// server, each registry, the store); a step that never finishes must not keep a stopping process
// alive, so past `--shutdown-timeout` the process exits non-zero and logs the steps still running.
import type { Logger } from '../log/logger.js';
import { OptionError, parseDurationMs } from '../adapters/option-values.js';

export const SHUTDOWN_TIMEOUT_DEFAULT = '10s';

/** `--shutdown-timeout`, in milliseconds (at least 1 ms). */
export function parseShutdownTimeout(value: unknown): number {
  const ms = parseDurationMs(
    typeof value === 'string' ? value : SHUTDOWN_TIMEOUT_DEFAULT,
    '--shutdown-timeout',
  );
  if (ms < 1) throw new OptionError(`--shutdown-timeout: must be at least 1ms, got "${String(value)}"`);
  return ms;
}

/** The steps of a shutdown that have started and not finished, by name. */
export class ShutdownSteps {
  private readonly running = new Map<number, string>();
  private next = 0;

  async run<T>(what: string, step: () => Promise<T> | T): Promise<T> {
    const id = this.next++;
    this.running.set(id, what);
    try {
      return await step();
    } finally {
      this.running.delete(id);
    }
  }

  waitingFor(): string[] {
    return [...this.running.values()];
  }
}

/**
 * Runs `stop` and exits: 0 when it finished, 1 when it failed or did not finish within `timeoutMs`
 * (the log line names what it was still waiting for).
 */
export function stopWithDeadline(
  stop: () => Promise<void>,
  waitingFor: () => readonly string[],
  timeoutMs: number,
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  const deadline = setTimeout(() => {
    logger.error(
      { waitingFor: waitingFor(), timeoutMs },
      `shutdown did not finish within ${timeoutMs} ms; exiting`,
    );
    exit(1);
  }, timeoutMs);
  stop().then(
    () => {
      clearTimeout(deadline);
      exit(0);
    },
    (err: unknown) => {
      clearTimeout(deadline);
      logger.error({ err }, 'error during shutdown');
      exit(1);
    },
  );
}
