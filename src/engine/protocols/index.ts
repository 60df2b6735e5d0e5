import type { ProtocolKind } from '../../config/preset-schema.js';
import { debate } from './debate.js';
import { decompose } from './decompose.js';
import { oxford } from './oxford.js';
import { delphi } from './delphi.js';
import { parallel } from './parallel.js';
import { pipeline } from './pipeline.js';
import { tournament } from './tournament.js';
import type { Protocol } from './types.js';

export type { Protocol } from './types.js';

/** The protocol a preset's `protocol.kind` names; see docs/protocols.md. */
export const protocols: Record<ProtocolKind, Protocol> = { debate, parallel, tournament, decompose, pipeline, oxford, delphi };

export function protocolFor(kind: ProtocolKind | undefined): Protocol {
  return protocols[kind ?? 'debate'];
}
