// Merges change events into pushes. The first event opens a window of `windowMs`; everything that
// arrives inside it is merged and pushed when it closes. Unlike a quiet-period debounce, steady churn
// cannot starve pushes: latency is at most one window, the cadence at most one push per window.
import { mergeChanges, type ChangeEvent } from '../model/change.js';

export class PushDebouncer {
  private pending: ChangeEvent | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly windowMs: number,
    private readonly flush: (event: ChangeEvent) => void,
  ) {}

  add(event: ChangeEvent): void {
    this.pending = this.pending ? mergeChanges(this.pending, event) : event;
    if (this.windowMs <= 0) return this.fire();
    this.timer ??= setTimeout(() => this.fire(), this.windowMs);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = undefined;
  }

  private fire(): void {
    this.timer = undefined;
    const event = this.pending;
    this.pending = undefined;
    if (event) this.flush(event);
  }
}
