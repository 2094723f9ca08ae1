// Adaptive admission of new streams: beyond --push-new-streams-per-second while the event loop keeps
// up, back to exactly that rate when it does not. A simulated clock and loop delay drive the limiter.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  CEILING_FACTOR,
  IDLE_LATE_MS,
  IDLE_SLICE_MS,
  SAMPLE_MS,
  timerLagDelay,
  type LoopDelay,
} from '../../../xds/server/admission.js';
import { PushLimiter, type SlotHolder } from '../../../xds/server/flow-control.js';

const BASE = 100; // guaranteed new streams per second
const STORM = 2000;

/** A loop delay the test sets; records whether the sampler runs. */
class FakeDelay implements LoopDelay {
  lagMs = 0;
  running = false;
  private onSample: ((lateMs: number) => void) | undefined;
  start(onSample?: (lateMs: number) => void): void {
    this.running = true;
    this.onSample = onSample;
  }
  stop(): void {
    this.running = false;
    this.onSample = undefined;
  }
  /** A sample of the loop, `lateMs` late (no sample is taken unless a test calls this). */
  sample(lateMs: number): void {
    this.onSample?.(lateMs);
  }
  takeMaxMs(): number {
    return this.lagMs;
  }
}

interface Sim {
  readonly limiter: PushLimiter;
  readonly delay: FakeDelay;
  /** Streams granted so far, in order. */
  readonly granted: string[];
  /** Opens `n` new streams. */
  open(n: number, prefix?: string): SlotHolder[];
  /** Advances simulated time by `ms`, firing the limiter's timers and the sampler on the way (1 ms steps). */
  advance(ms: number): void;
}

/** `grantCostMs`: the simulated time each grant (a stream's first response) takes. */
function simulate(
  t: TestContext,
  admissionMaxDelayMs: number,
  concurrency = 1_000_000,
  grantCostMs = 0,
): Sim {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  let clock = 0;
  let steps = 0; // the clock also moves by what grants cost: samples follow the steps
  const delay = new FakeDelay();
  const limiter = new PushLimiter(
    { concurrency, newStreamsPerSecond: BASE, stuckMs: 60_000, admissionMaxDelayMs },
    () => clock,
    delay,
  );
  t.after(() => limiter.stop());
  const granted: string[] = [];
  return {
    limiter,
    delay,
    granted,
    open(n, prefix = 'new') {
      const holders = Array.from({ length: n }, (_, i) => {
        const name = `${prefix}${i}`;
        const h: SlotHolder = {
          admitted: false,
          closed: false,
          grant: () => {
            clock += grantCostMs;
            granted.push(name);
          },
        };
        return h;
      });
      for (const h of holders) limiter.acquire(h);
      return holders;
    },
    advance(ms) {
      for (let i = 0; i < ms; i++) {
        clock += 1;
        t.mock.timers.tick(1);
        // The sampler's tick, `lagMs` late, while an episode runs it.
        if (++steps % SAMPLE_MS === 0 && delay.running) delay.sample(delay.lagMs);
      }
    },
  };
}

/** Streams admitted by each full second of a storm of STORM streams. */
function admittedPerSecond(sim: Sim, seconds: number): number[] {
  sim.open(STORM);
  const counts: number[] = [];
  for (let s = 0; s < seconds; s++) {
    sim.advance(1000);
    counts.push(sim.granted.length);
  }
  return counts;
}

test('admission 0 keeps strict pacing: the burst, then exactly the guaranteed rate', (t) => {
  const sim = simulate(t, 0);
  const counts = admittedPerSecond(sim, 3);
  assert.deepEqual(counts, [2 * BASE, 3 * BASE, 4 * BASE]);
  assert.equal(sim.limiter.admissionRate, BASE);
  assert.equal(sim.delay.running, false, 'no sampler without the adaptive part');
});

test('a server that keeps up, though never idle, admits a storm faster than the guaranteed rate', (t) => {
  const sim = simulate(t, 50);
  sim.delay.lagMs = BUSY_MS;
  sim.open(STORM);
  sim.advance(1000);
  assert.ok(sim.delay.running, 'the sampler runs during the storm');
  assert.equal(sim.limiter.idleAdmitted, 0);
  // Strict pacing: 200 by now, the whole storm after 19 s.
  assert.ok(sim.granted.length > 4 * BASE, `after 1 s: ${sim.granted.length}`);
  sim.advance(2000);
  assert.equal(sim.granted.length, STORM, 'the whole storm within 3 s');
});

test('an idle server admits a storm in its idle time, as fast as the first responses take', (t) => {
  const sim = simulate(t, 50, 1_000_000, 0.1);
  sim.open(STORM);
  sim.advance(100);
  assert.ok(sim.delay.running, 'the sampler runs during the storm');
  // 1 ms of each 2 ms sample at 0.1 ms a stream: about 500 in 100 ms (strict pacing: 10).
  assert.ok(sim.limiter.idleAdmitted >= 400, `${sim.limiter.idleAdmitted} on idle time`);
  sim.advance(900);
  assert.equal(sim.granted.length, STORM, 'the whole storm within 1 s');
});

test('an overloaded server (loop delay over the limit) admits exactly the guaranteed rate', (t) => {
  const sim = simulate(t, 50);
  sim.delay.lagMs = 80;
  assert.deepEqual(admittedPerSecond(sim, 3), [2 * BASE, 3 * BASE, 4 * BASE]);
  assert.equal(sim.limiter.admissionRate, BASE);
});

/** A loop that keeps up (well under the limit) but is never idle: the adaptive rate alone admits. */
const BUSY_MS = IDLE_LATE_MS + 1;

test('the extra rate never exceeds the ceiling, and no window lets more than its share through', (t) => {
  const sim = simulate(t, 50);
  sim.delay.lagMs = BUSY_MS;
  sim.open(100_000);
  let before = sim.granted.length; // the burst
  let maxRate = 0;
  for (let s = 0; s < 5; s++) {
    for (let w = 0; w < 20; w++) {
      const start = sim.granted.length;
      sim.advance(50);
      maxRate = Math.max(maxRate, sim.limiter.admissionRate);
      // One 50 ms window: the guaranteed tokens plus at most one window's worth of the ceiling.
      assert.ok(sim.granted.length - start <= ((CEILING_FACTOR * BASE) / 1000) * 50 + 1);
    }
    const second = sim.granted.length - before;
    before = sim.granted.length;
    assert.ok(second <= CEILING_FACTOR * BASE, `second ${s}: ${second} admitted`);
  }
  assert.equal(maxRate, CEILING_FACTOR * BASE, 'the rate reaches the ceiling on an idle server');
});

test('delay over the limit halves the extra rate; recovery is additive, not a new slow start', (t) => {
  const sim = simulate(t, 50);
  sim.delay.lagMs = BUSY_MS;
  sim.open(100_000);
  sim.advance(1000);
  assert.equal(sim.limiter.admissionRate, CEILING_FACTOR * BASE);
  sim.delay.lagMs = 200;
  const rates: number[] = [];
  for (let w = 0; w < 3; w++) {
    sim.advance(50);
    rates.push(sim.limiter.admissionRate - BASE);
  }
  const extra = (CEILING_FACTOR - 1) * BASE;
  assert.deepEqual(rates, [extra / 2, Math.floor(extra / 4), Math.floor(Math.floor(extra / 4) / 2)]);
  const low = sim.limiter.admissionRate;
  sim.delay.lagMs = BUSY_MS;
  sim.advance(50);
  assert.equal(sim.limiter.admissionRate, low + BASE);
  sim.advance(50);
  assert.equal(sim.limiter.admissionRate, low + 2 * BASE);
});

test('served streams go before new ones even when the load allows more new streams', (t) => {
  const sim = simulate(t, 50, 2);
  const storm = sim.open(500);
  sim.advance(500); // the episode is under way; every slot is taken by the first two
  const old: SlotHolder = { admitted: true, closed: false, grant: () => sim.granted.push('old') };
  sim.limiter.acquire(old);
  const first = storm[0];
  assert.ok(first);
  sim.limiter.release(first);
  assert.equal(sim.granted.at(-1), 'old');
});

test('the episode ends a few windows after the storm: the sampler stops, the rate is the guaranteed one', (t) => {
  const sim = simulate(t, 50);
  sim.open(STORM);
  sim.advance(3000);
  assert.equal(sim.granted.length, STORM);
  assert.equal(sim.delay.running, false);
  assert.equal(sim.limiter.admissionRate, BASE);
  // The next storm starts from the guaranteed rate again, with a refilled burst.
  sim.advance(1000);
  sim.open(STORM, 'again');
  assert.equal(sim.granted.length, STORM + BASE);
});

test('the timer-lag sampler reports how late its timer fired, also for a stall that spans a reading', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let clock = 0;
  const delay = timerLagDelay(10, () => clock);
  t.after(() => delay.stop());
  delay.start();
  clock += 10;
  t.mock.timers.tick(10);
  assert.equal(delay.takeMaxMs(), 0, 'on time');
  clock += 70; // the loop was busy for 70 ms; a reading comes before the timer could fire
  assert.equal(delay.takeMaxMs(), 0);
  t.mock.timers.tick(10);
  assert.equal(delay.takeMaxMs(), 60, 'the stall is reported at the next reading');
  assert.equal(delay.takeMaxMs(), 0, 'each reading starts afresh');
  delay.stop();
  clock += 500;
  t.mock.timers.tick(500);
  assert.equal(delay.takeMaxMs(), 0, 'stopped: nothing measured');
});

test('idle time admits new streams beyond the rates, by what their first responses cost', (t) => {
  const sim = simulate(t, 50, 1_000_000, 0.1);
  sim.open(STORM);
  sim.delay.sample(0);
  // IDLE_SLICE_MS of loop time at 0.1 ms a stream: ten (the last may end past the slice).
  const cheap = sim.limiter.idleAdmitted;
  assert.ok(cheap >= IDLE_SLICE_MS / 0.1 && cheap <= IDLE_SLICE_MS / 0.1 + 1, `${cheap} admitted`);
  const granted = sim.granted.length;
  sim.delay.sample(IDLE_LATE_MS + 5);
  assert.equal(sim.granted.length, granted, 'a late sample (a busy loop) admits none');
  assert.equal(sim.limiter.idleAdmitted, cheap);
});

test('a stream whose first response costs more than the idle slice goes alone', (t) => {
  const sim = simulate(t, 50, 1_000_000, 5 * IDLE_SLICE_MS);
  sim.open(STORM);
  for (let i = 1; i <= 3; i++) {
    sim.delay.sample(0);
    assert.equal(sim.limiter.idleAdmitted, i);
  }
});

test('the idle allowance is for the moment that earned it: it does not add up, and a busy sample takes it away', (t) => {
  // One slot beyond the guaranteed burst; 0.05 ms a grant keeps the guaranteed tokens under one
  // while this runs (100 a second).
  const sim = simulate(t, 50, BASE + 1, 0.05);
  const storm = sim.open(STORM);
  assert.equal(sim.granted.length, BASE, 'the burst; the next stream waits for a token');
  sim.delay.sample(0);
  assert.equal(sim.granted.length, BASE + 1, 'idle time takes the free slot');
  for (let i = 0; i < 5; i++) sim.delay.sample(0);
  // Every slot frees at once: one slice's worth goes, not five.
  for (const h of storm.slice(0, BASE + 1)) sim.limiter.release(h);
  const freed = sim.granted.length - BASE - 1;
  assert.ok(freed >= 1 && freed <= IDLE_SLICE_MS / 0.05 + 1, `${freed} admitted`);
  sim.delay.sample(IDLE_LATE_MS + 1);
  const before = sim.granted.length;
  for (const h of storm.slice(BASE + 1, BASE + 1 + freed)) sim.limiter.release(h);
  assert.equal(sim.granted.length, before, 'after a busy sample, freed slots admit none');
  sim.delay.sample(0);
  assert.ok(sim.granted.length > before, 'the next idle sample admits again');
});
