/**
 * One drill's figures, and the Markdown table `npm run drill` writes (docs/reliability.md
 * keeps the table of a full run).
 */
export interface DrillRow {
  readonly drill: string;
  readonly subject: string;
  readonly inputs: number;
  /** Outputs other than dead letters: decisions, admissions, delivered results. */
  readonly answers: number;
  /** Inputs that should have been answered and were not. */
  readonly lost: number;
  /** Outputs read twice by a read-committed consumer (what a consumer dropping duplicates by ID drops). */
  readonly duplicated: number;
  readonly deadLettered: number;
  readonly peakRssMb: number;
  /** Named pass/fail checks particular to the drill. */
  readonly checks: Readonly<Record<string, boolean>>;
  readonly details: readonly string[];
  readonly seconds: number;
  readonly command: string;
  /** What the drill measured besides its checks (the broker drills: how long each recovery took). */
  readonly notes?: readonly string[];
}

/** Duplicates are a figure, not a failure: consumers drop them by ID (a check makes sure they are true copies). */
export function passed(row: DrillRow): boolean {
  return row.lost === 0 && Object.values(row.checks).every(Boolean);
}

export function drillTable(rows: readonly DrillRow[]): string {
  const lines = [
    "| drill | processor | inputs | answers | lost | duplicated | dead-lettered | peak RSS MiB | checks | seconds |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
  ];
  for (const r of rows) {
    const checks = Object.entries(r.checks)
      .map(([name, ok]) => `${ok ? "yes" : "NO"}: ${name}`)
      .join("; ");
    lines.push(`| ${r.drill} | ${r.subject} | ${r.inputs} | ${r.answers} | ${r.lost} | ${r.duplicated} | ${r.deadLettered} | ${r.peakRssMb} | ${checks} | ${r.seconds.toFixed(0)} |`);
  }
  return lines.join("\n");
}
