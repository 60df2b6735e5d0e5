import { writeFileSync } from 'node:fs';
import { presetJsonSchemaText } from '../src/config/preset-json-schema.js';
import { packagePath } from '../src/package-root.js';

// Regenerates presets/preset.schema.json from the zod schema; a test fails when they drift.
const path = packagePath('presets', 'preset.schema.json');
writeFileSync(path, presetJsonSchemaText());
process.stdout.write(`wrote ${path}\n`);
