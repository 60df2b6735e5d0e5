/** Why a debate stopped, in words (the live view, the card, Markdown and the viewer say it alike). */
export function exitText(reason: string): string {
  switch (reason) {
    case 'converged':
      return 'the panel converged';
    case 'max_rounds':
      return 'reached the round limit';
    case 'too_few_answers':
      return 'too few usable answers';
    case 'answered':
      return 'every agent answered';
    case 'champion':
      return 'the tournament has a champion';
    case 'reassembled':
      return 'the parts were reassembled';
    case 'verdict':
      return 'the judge gave a verdict on the motion';
    case 'stable':
      return "the panel's spread stopped narrowing";
    case 'filtered':
      return 'every phase ran, through the filter';
    case 'interrupted':
      return 'interrupted';
    case 'budget':
      return 'the token budget was spent';
    default:
      return reason;
  }
}

/**
 * Why a debate stopped, in words, to write beside its status; null when there is no reason or the
 * words would only say the status again (an interrupted debate's reason is `interrupted`).
 */
export function exitTextBeside(status: string, reason: string | null | undefined): string | null {
  if (!reason) return null;
  const text = exitText(reason);
  return text === status ? null : text;
}
