/**
 * The load's progress on stderr: on a terminal one line redrawn in place, otherwise (a log, a
 * container) a plain line every few seconds, so a log is not flooded with carriage returns.
 */

export interface ProgressState {
  readonly phase: string;
  readonly events: number;
  readonly planned: number;
  readonly answers: number;
  readonly unanswered: number;
  readonly elapsedMs: number;
  readonly limitMs: number;
}

/** One line: a bar of the events sent against the plan, the rate and the time left. */
export function progressLine(s: ProgressState, width = 24): string {
  const done = Math.max(0, Math.min(width, Math.round((s.events / Math.max(1, s.planned)) * width)));
  const rate = s.events / Math.max(0.001, s.elapsedMs / 1000);
  const left = Math.max(0, Math.ceil((s.limitMs - s.elapsedMs) / 1000));
  const missing = s.unanswered > 0 ? `, ${s.unanswered} unanswered` : "";
  return `${s.phase} [${"#".repeat(done)}${".".repeat(width - done)}] ${s.events}/${s.planned} events, ${s.answers} answers${missing}, ${rate.toFixed(0)}/s, ${left}s left`;
}

export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private readonly out: NodeJS.WriteStream;
  private readonly tty: boolean;
  private lastPlain = 0;

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.out = out;
    this.tty = Boolean(out.isTTY);
  }

  start(state: () => ProgressState): void {
    this.timer = setInterval(() => this.draw(state()), this.tty ? 250 : 1_000);
  }

  private draw(s: ProgressState): void {
    if (this.tty) {
      const columns = this.out.columns || 120;
      this.out.write(`\r${progressLine(s).slice(0, columns - 1)}\x1b[K`);
    } else if (Date.now() - this.lastPlain >= 5_000) {
      this.lastPlain = Date.now();
      this.out.write(`${progressLine(s)}\n`);
    }
  }

  /** Draws the final state and ends the line. */
  stop(final: ProgressState): void {
    clearInterval(this.timer);
    this.out.write(this.tty ? `\r${progressLine(final)}\x1b[K\n` : `${progressLine(final)}\n`);
  }
}
