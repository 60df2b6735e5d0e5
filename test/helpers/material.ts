/**
 * A migration plan to attach in tests and benchmarks: Markdown sections on distinct topics,
 * so excerpts chosen for a focus are easy to tell apart. `sections` picks how many (each
 * about 800 characters; 12 make about three printed pages).
 */
const TOPICS: [string, string][] = [
  ['Scope', 'This plan moves the billing service from a single SQLite file to a managed Postgres cluster. The service records invoices, payment attempts and refunds for about four thousand customers.'],
  ['Rollback', 'Rollback keeps the SQLite file read-only for two weeks after the cutover. A rollback replays the Postgres write log into SQLite with the replay tool, then flips the connection flag back. The rollback drill runs twice before the cutover.'],
  ['Backups', 'Backups run every hour as logical dumps plus continuous archiving of the write-ahead log. Restores are tested weekly into a scratch cluster; a restore that takes more than forty minutes fails the drill.'],
  ['Downtime', 'The cutover needs a write freeze of about twenty minutes on a Sunday morning. Reads stay available from the SQLite file during the freeze. Customers get notice a week ahead.'],
  ['Cost', 'The managed cluster costs about nine hundred euros a month with two replicas. Engineering time for the move is estimated at six person-weeks, most of it in testing.'],
  ['Security', 'Credentials move to the secrets vault; the service account gets only the privileges it needs on the billing schema. Connections use TLS with certificate pinning.'],
  ['Staffing', 'Two engineers own the migration, with one database administrator on call during the cutover window. The on-call rota adds Postgres alerts from the first day.'],
  ['Testing', 'Every query of the service runs against both stores in shadow mode for a week; differences in results are logged and must reach zero before the cutover date is fixed.'],
  ['Monitoring', 'Dashboards track replication lag, connection pool saturation, slow queries above two hundred milliseconds and disk growth. Alerts page the on-call engineer.'],
  ['Data model', 'Money amounts move from floating point to integer cents. Timestamps become timestamptz in UTC. The invoices table gains a partial index on unpaid invoices.'],
  ['Compliance', 'Invoice records are kept ten years under the retention rules. The audit log of refunds moves with the data and keeps its hash chain intact.'],
  ['Timeline', 'Shadow mode starts in week two, the rollback drill in week four, the cutover in week six, and the SQLite file is archived in week eight.'],
];

export function migrationPlan(sections = 12): string {
  const parts: string[] = ['# Billing store migration plan', ''];
  for (let i = 0; i < sections; i++) {
    const [title, body] = TOPICS[i % TOPICS.length]!;
    const round = Math.floor(i / TOPICS.length);
    parts.push(`## ${i + 1}. ${title}${round ? ` (part ${round + 1})` : ''}`, '');
    // Each section restates its point in a few more sentences, as plans do, so it runs to about 800 characters.
    parts.push(body, '', `${body.split('. ')[0]}. This part of the plan is owned by the migration team and reviewed before each milestone.`, '', `Open points on ${title.toLowerCase()}: none recorded; ${title.toLowerCase()} is checked again at the go/no-go meeting.`, '', `Risks for ${title.toLowerCase()}: the estimate above assumes the current load and team; if either changes by more than a quarter before the cutover, the owners revise this section and record why in the change log of the plan.`, '');
  }
  return parts.join('\n');
}
