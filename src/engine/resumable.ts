import { InputError } from '../errors.js';

/** The protocols `conclave resume` can go on with from a stored point, without asking a finished round again; the others are run again. */
export const RESUMABLE_PROTOCOLS: ReadonlySet<string> = new Set(['debate', 'parallel', 'oxford', 'delphi']);

/**
 * How to go on with a run that stopped: `conclave resume ID` for a protocol that can, else run it
 * again. `first`: what to do before that (start the server again), or null.
 */
export function goOnHint(kind: string, id: string, first: string | null): string {
  const then = first === null ? '' : `${first}, then `;
  if (RESUMABLE_PROTOCOLS.has(kind)) return `${first === null ? 'Go on' : `${then}go on`} from where it stopped with \`conclave resume ${id}\`${first === null ? '' : ' (add --host URL to go on with another server)'}; see what it got to with \`conclave show ${id}\`.`;
  return `${first === null ? 'Run' : `${then}run`} the question again with \`conclave run\`: the ${kind} protocol cannot go on from a stored point. See what it got to with \`conclave show ${id}\`.`;
}

/** The resumable protocols in words: `debate, parallel, oxford and delphi`. */
export function resumableList(): string {
  const kinds = [...RESUMABLE_PROTOCOLS];
  return `${kinds.slice(0, -1).join(', ')} and ${kinds.at(-1)}`;
}

/** A model whose digest changed since the debate ran on it: going on would record another model's answers under the old digest. */
export function modelChanged(model: string, debateId: string, was: string, now: string, otherModel: string): InputError {
  return new InputError('MODEL_CHANGED', `Model \`${model}\` is not the one debate \`${debateId}\` ran on: it ran on digest ${was}, and the model of that name is now ${now}.`, {
    hint: `Put back the model the debate ran on (the same file, or the same version pulled again) and try again, or ${otherModel}.`,
  });
}
