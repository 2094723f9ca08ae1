// The pushes an ADS server has handed out, as an observer of it: a test that changes the model and
// then checks that a stream was sent nothing waits here for the push carrying its change first
// (`next`), then probes the stream (expectSilence): the push's work was marked on every affected
// stream when it was handed out, so the probe's answer comes after anything it caused.
import type { AdsObserver, PushInfo } from '../../xds/server/observer.js';

interface Waiter {
  readonly after: number;
  readonly matches: (push: PushInfo) => boolean;
  readonly resolve: (push: PushInfo) => void;
}

export class PushProgress implements AdsObserver {
  /** Pushes handed out so far. */
  handedOut = 0;
  private waiters: Waiter[] = [];

  pushHandedOut(push: PushInfo): void {
    this.handedOut += 1;
    const ready = this.waiters.filter((w) => this.handedOut > w.after && w.matches(push));
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(push);
  }

  /** Makes `change` and resolves once the push after it (one that `matches`) has been handed out. */
  after(change: () => unknown, matches?: (push: PushInfo) => boolean): Promise<PushInfo> {
    return pushedAfter(this, change, matches);
  }

  /**
   * The next push handed out after this call that `matches` (default: any). Call it before making
   * the change, so the push cannot be missed; it rejects after `timeoutMs`.
   */
  next(matches: (push: PushInfo) => boolean = () => true, timeoutMs = 10_000): Promise<PushInfo> {
    return new Promise<PushInfo>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`no push handed out within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = {
        after: this.handedOut,
        matches,
        resolve: (push) => {
          clearTimeout(timer);
          resolve(push);
        },
      };
      this.waiters.push(waiter);
    });
  }
}

/**
 * Makes a change and resolves once the push after it (one that `matches`) has been handed out.
 */
export async function pushedAfter(
  progress: PushProgress,
  change: () => unknown,
  matches?: (push: PushInfo) => boolean,
): Promise<PushInfo> {
  const pushed = progress.next(matches);
  await change();
  return pushed;
}

/** Matches a push caused by a change of `hostname`. */
export const pushOf =
  (hostname: string) =>
  (push: PushInfo): boolean =>
    push.trigger.hostnames.includes(hostname);
