// The command after `--` (an Envoy, usually): started once the agent serves, restarted with backoff
// whenever it exits, and drained on shutdown — SIGTERM forwarded, a bounded wait, then SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '../log/logger.js';
import { Backoff, type BackoffOptions } from '../model/backoff.js';
import { childEnv } from './child-env.js';

export interface SupervisorOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly logger: Logger;
  /** How long a SIGTERMed child may take to exit before SIGKILL (default 20 s). */
  readonly drainMs?: number;
  /** Between restarts (default 1 s doubling to 30 s). */
  readonly backoff?: BackoffOptions;
  /** A child that ran this long resets the backoff (default 10 s). */
  readonly stableAfterMs?: number;
  readonly onRestart?: () => void;
  /** The environment it starts with (default: the agent's); the agent's secrets are left out either way. */
  readonly env?: NodeJS.ProcessEnv;
}

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 30_000, jitter: 0.2 };

export class Supervisor {
  private child: ChildProcess | undefined;
  private readonly backoff: Backoff;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Times the command was started again after exiting. */
  restarts = 0;
  lastExit: { code: number | null; signal: NodeJS.Signals | null; at: Date } | undefined;

  constructor(private readonly options: SupervisorOptions) {
    this.backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  running(): boolean {
    return this.child !== undefined;
  }

  start(): void {
    if (this.stopping) return;
    const { command, args, logger } = this.options;
    const startedAt = Date.now();
    const child = spawn(command, [...args], { stdio: 'inherit', env: childEnv(this.options.env) });
    this.child = child;
    let gone = false;
    const onGone = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (gone) return;
      gone = true;
      this.child = undefined;
      this.lastExit = { code, signal, at: new Date() };
      if (this.stopping) return;
      if (Date.now() - startedAt >= (this.options.stableAfterMs ?? 10_000)) this.backoff.reset();
      const delay = this.backoff.next();
      logger.warn({ command, code, signal, restartInMs: delay }, 'the command exited: restarting it');
      this.restartTimer = setTimeout(() => {
        this.restarts += 1;
        this.options.onRestart?.();
        this.start();
      }, delay);
    };
    child.once('exit', onGone);
    // A command that cannot be started (not found, not executable) never exits: retry it the same way.
    child.once('error', (err) => {
      logger.error({ err, command }, 'the command failed');
      if (child.pid === undefined) onGone(null, null);
    });
    logger.info({ command, args, pid: child.pid }, 'command started');
  }

  /** SIGTERM, wait up to drainMs, then SIGKILL; resolves once the child is gone. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child?.pid) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const drainMs = this.options.drainMs ?? 20_000;
    this.options.logger.info({ pid: child.pid, drainMs }, 'draining the command (SIGTERM)');
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), drainMs);
    });
    const killed = await Promise.race([exited.then(() => false), late]);
    if (timer) clearTimeout(timer);
    if (killed) {
      this.options.logger.warn({ pid: child.pid, drainMs }, 'the command did not exit in time: SIGKILL');
      child.kill('SIGKILL');
      await exited;
    }
  }
}
