import { writeFileSync } from 'node:fs';
import { eventsDoc } from '../src/events/doc.js';
import { packagePath } from '../src/package-root.js';

// Regenerates docs/events.md from the zod types of the events; a test fails when they drift.
const path = packagePath('docs', 'events.md');
writeFileSync(path, eventsDoc());
process.stdout.write(`wrote ${path}\n`);
