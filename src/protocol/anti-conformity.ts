/**
 * Anti-conformity critique (`protocol.critique: anti-conformity`, docs/protocol-anti-conformity.md):
 * every agent, in every critique round, is asked to defend its own position and to name the
 * weakest point of each peer's, so that a panel does not drift to its majority by politeness.
 */

/** The section every agent reads in a critique round when the preset asks for anti-conformity. */
export function antiConformityBrief(): string {
  return [
    'How to critique in this round: your job is not to agree with the majority, and agreeing is no goal in itself.',
    'First defend your own position: state the strongest reason it holds, and answer the best objection to it.',
    'Then, for each other panelist, name the weakest point of their position: the assumption most likely false, the step that does not follow, or the cost they left out.',
    'Change your position only if a peer gave you a reason you cannot answer; say which reason it was. Agreeing because several peers say the same thing is not a reason.',
  ].join('\n');
}

/** The debate settings a header or card shows when they differ from the defaults; null when none do. */
export function debateSettingsLine(protocol: { critique?: string | undefined; decision?: string | undefined; earlyExit?: boolean | undefined; maxRounds: number }): string | null {
  const parts: string[] = [];
  if (protocol.critique === 'anti-conformity') parts.push('critique: anti-conformity (each agent defends its position and names the weakest point of each peer\'s)');
  if (protocol.decision === 'trajectory') parts.push('decision: trajectory (the best Free-MAD score over all rounds)');
  if (protocol.earlyExit === false) parts.push(`early exit off (all ${protocol.maxRounds} critique round${protocol.maxRounds === 1 ? '' : 's'} run)`);
  return parts.length ? parts.join(' · ') : null;
}
