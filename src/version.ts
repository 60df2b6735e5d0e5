import { readFileSync } from 'node:fs';
import { packagePath } from './package-root.js';

/** The engine version, read once from package.json; stored with every debate. */
export const VERSION: string = (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;
