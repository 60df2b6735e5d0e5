import { z } from 'zod';
import { EVENTS_VERSION, EVENT_SCHEMAS } from './schema.js';

interface JsonSchema {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  additionalProperties?: unknown;
  minimum?: number;
  maximum?: number;
}

/** A field's type in a few words, from its JSON Schema. */
function typeText(s: JsonSchema): string {
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  if (s.enum) return s.enum.map((v) => `\`${JSON.stringify(v)}\``).join(' \\| ');
  const types = s.type === undefined ? ['any JSON'] : Array.isArray(s.type) ? s.type : [s.type];
  return types
    .map((t) => {
      if (t === 'array') return `array of ${s.items ? typeText(s.items) : 'any'}`;
      if (t === 'object' && s.properties) return `{${Object.entries(s.properties).map(([k, v]) => `${k}: ${typeText(v)}`).join(', ')}}`;
      if (t === 'object') return 'object';
      return t;
    })
    .join(' or ');
}

/** docs/events.md, written from the zod types of the events: the document cannot drift from the code. */
export function eventsDoc(): string {
  const lines: string[] = [
    '# Events (`--events`)',
    '',
    '<!-- Generated from src/events/schema.ts by `npm run docs:events`; a test fails when it is out of date. -->',
    '',
    '`conclave run`, `resume`, `synthesize`, `demo` and `bench` take `--events`: stdout then carries the run as it happens,',
    'one JSON object per line (NDJSON), instead of the card. Progress stays on stderr (`--quiet` silences it). `--events`',
    'and `--json` are exclusive.',
    '',
    `Every line has \`v\` (${EVENTS_VERSION}), \`debateId\`, \`seq\`, \`type\` and \`at\`, then the fields of its type. The last line is`,
    'always `end`, with the exit code the command returns, also when it fails or is interrupted.',
    '',
    'Streamed text comes as `call.delta` lines: at most one per call every 100 ms, each with the text so far of the field',
    'the model is writing (`position`, `updatedPosition`, `recommendation`, …), read from its partial JSON. Replace the text',
    "you show with each line's; do not append. A call's deltas always come before its `call.finished`.",
    '',
    'Model and server text (questions, positions, errors, the synthesis) is carried as plain JSON strings, exactly as',
    'written: it can hold anything, terminal escapes and HTML included. A program that shows it must make it inert.',
    '',
    'A line validates against the union of the types below (`conclaveEvent` in src/events/schema.ts). Unknown fields are',
    'not sent; a reader should still ignore fields it does not know, as a later version may add some.',
    '',
  ];
  for (const schema of EVENT_SCHEMAS) {
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    const props = json.properties ?? {};
    const type = props.type?.const as string;
    lines.push(`## \`${type}\``, '', json.description ?? '', '', '| field | type | meaning |', '| --- | --- | --- |');
    for (const [name, p] of Object.entries(props)) {
      if (['v', 'debateId', 'seq', 'at', 'type'].includes(name)) continue;
      const optional = json.required?.includes(name) ? '' : ' (optional)';
      lines.push(`| \`${name}\`${optional} | ${typeText(p)} | ${(p.description ?? '').replace(/\|/g, '\\|')} |`);
    }
    lines.push('');
  }
  const common = z.toJSONSchema(EVENT_SCHEMAS[0], { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  lines.push('## Fields on every line', '', '| field | type | meaning |', '| --- | --- | --- |');
  for (const name of ['v', 'debateId', 'seq', 'at']) {
    const p = common.properties?.[name] ?? {};
    lines.push(`| \`${name}\` | ${typeText(p)} | ${(p.description ?? '').replace(/\|/g, '\\|')} |`);
  }
  lines.push('| `type` | string | One of the types above. |', '');
  return `${lines.join('\n')}`;
}
