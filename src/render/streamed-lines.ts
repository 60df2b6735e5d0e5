import type { Stage } from '../engine/call-record.js';
import { streamedAnswer } from '../protocol/partial-json.js';
import { inertLine } from './inert.js';
import type { Paint } from './style.js';
import { clipLine, visibleWidth } from './wrap.js';

/** The last part of a model's thinking kept for `--show-thinking`: its last line is all that is shown. */
const THOUGHT_KEEP = 2000;

/** What one call has streamed: its reply (JSON being written) and the tail of its thinking. */
export class StreamedReply {
  #raw = '';
  #thought = '';
  #readAt = -1;
  #text = '';
  #inThought = false;

  add(delta: string, thought?: string): void {
    this.#raw += delta;
    if (thought) this.#thought = (this.#thought + thought).slice(-THOUGHT_KEEP);
  }

  /** Whether tokens came but no answer yet: the model is thinking. */
  thinking(tokens: number): boolean {
    if (this.#raw === '') return tokens > 0;
    this.#read();
    return this.#inThought;
  }

  /** The answer field's text so far; read again only when more arrived. */
  text(): string {
    this.#read();
    return this.#text;
  }

  #read(): void {
    if (this.#readAt === this.#raw.length) return;
    const answer = streamedAnswer(this.#raw, 0);
    this.#text = answer.hit?.text ?? '';
    this.#inThought = answer.thinking;
    this.#readAt = this.#raw.length;
  }

  lastThought(): string {
    const lines = this.#thought.split('\n').map((l) => l.trim()).filter(Boolean);
    return lines.at(-1) ?? '';
  }
}

/**
 * The rows a streaming call adds under its line in the live block: its answer's last words,
 * growing in place (two rows; four for the synthesis's recommendation), or, behind
 * --show-thinking, the last line of its thinking, dimmed. Every row fits the terminal,
 * and model text is inert.
 */
export function streamedLines(reply: StreamedReply, stage: Stage, columns: number, paint: Paint, showThinking: boolean): string[] {
  const indent = '      ';
  const room = Math.max(10, columns - indent.length - 1);
  const text = inertLine(reply.text()).replace(/\s+/g, ' ').trim();
  if (text === '') {
    const thought = showThinking ? inertLine(reply.lastThought()) : '';
    return thought === '' ? [] : [clipLine(`${indent}${paint('dim', tail(thought, room))}`, columns)];
  }
  const synthesis = stage === 'synthesis' || stage === 'reassembly';
  const rows = tailRows(text, room, synthesis ? 4 : 2).map((r) => clipLine(`${indent}${r}`, columns));
  return synthesis ? [`    ${paint('bold', 'RECOMMENDATION')} ${paint('dim', '(being written)')}`, ...rows] : rows;
}

/** The end of a text within `room` columns, with an ellipsis in front when cut. */
function tail(text: string, room: number): string {
  if (visibleWidth(text) <= room) return text;
  const chars = [...text];
  let out = '';
  for (let i = chars.length - 1; i >= 0 && visibleWidth(`…${chars[i]}${out}`) <= room; i--) out = chars[i] + out;
  return `…${out}`;
}

/** The last `count` rows of the text word-wrapped at `room` columns. */
function tailRows(text: string, room: number, count: number): string[] {
  const rows: string[] = [];
  let row = '';
  for (const word of text.split(' ')) {
    const w = visibleWidth(word);
    if (row !== '' && visibleWidth(row) + 1 + w > room) {
      rows.push(row);
      row = '';
    }
    row = row === '' ? (w > room ? tail(word, room) : word) : `${row} ${word}`;
  }
  if (row !== '') rows.push(row);
  const shown = rows.slice(-count);
  if (rows.length > count && shown[0] !== undefined) shown[0] = tail(`…${shown[0]}`, room);
  return shown;
}
