/** `--events`: NDJSON on stdout (docs/events.md), instead of the card or `--json`'s document. */
export const eventsOption = {
  type: 'boolean',
  describe: 'Print the run as it happens, one JSON event per line on stdout (docs/events.md); not with --json',
} as const;

/** `--show-thinking`: the live view shows the last line a thinking model wrote, dimmed. */
export const showThinkingOption = {
  type: 'boolean',
  describe: "On a terminal, show the last line of a thinking model's thinking, dimmed, while it thinks",
} as const;
