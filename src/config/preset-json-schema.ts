import { z } from 'zod';
import { presetSchema } from './preset-schema.js';

/** JSON Schema of the preset format, for editors and other tools; shipped as presets/preset.schema.json. */
export function presetJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(presetSchema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;
  // An agent may also be the path of a Markdown file that defines it (src/config/agent-files.ts).
  const agents = (schema.properties as Record<string, { items: unknown }>).agents!;
  agents.items = {
    anyOf: [
      agents.items,
      { type: 'string', pattern: '\\.[mM][dD]$', description: 'A Markdown file inside the preset\'s folder, relative to the preset: YAML front matter with the agent\'s fields, the body its persona.' },
    ],
  };
  return { ...schema, $id: 'https://conclave.local/preset.schema.json', title: 'Conclave preset' };
}

export function presetJsonSchemaText(): string {
  return `${JSON.stringify(presetJsonSchema(), null, 2)}\n`;
}
