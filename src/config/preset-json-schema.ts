import { z } from 'zod';
import { presetSchema } from './preset-schema.js';

/** JSON Schema of the preset format, for editors and other tools; shipped as presets/preset.schema.json. */
export function presetJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(presetSchema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;
  return { ...schema, $id: 'https://conclave.local/preset.schema.json', title: 'Conclave preset' };
}

export function presetJsonSchemaText(): string {
  return `${JSON.stringify(presetJsonSchema(), null, 2)}\n`;
}
