import type { KeyObject } from 'node:crypto';
import { InputError, IntegrityError } from '../errors.js';
import { type DebateRows, describeBreak, type Verdict, verifyRows } from './chain.js';
import { type SealSigner, signatureProblem } from './signing.js';

// The one gate every write of a seal passes (docs/record.md, "Threat model"): the store's
// checkpoint seal, whatever command writes it (run, resume, synthesize, a library caller),
// and the seal an import copies in. A seal written over a record that does not verify would
// launder it; a signature written over one whose signature does not verify would vouch for a forgery.

/** Who may write this seal: the key the write signs with, or the key a bundle must be signed with. */
export interface GateKeys {
  /** The key the store signs every seal it writes with (`--sign-key`, `CONCLAVE_SIGNING_KEY`), or null. */
  signer?: SealSigner | null;
  /** For a copied seal (`import --public-key`): the key it must be signed with. */
  publicKey?: KeyObject | null;
}

/**
 * Verifies the record a seal is about to be written over, and refuses the write unless:
 * the chain and the seal match every row; a signed record is continued with the key that
 * signed it, and that signature still holds; an unsigned record is not signed now (a signature
 * would vouch for rows that no key vouched for); a copied seal is signed by `publicKey` when one is given.
 * `rows` is null for a debate not recorded yet: nothing to continue. `label` names it in messages.
 */
export function sealGate(rows: DebateRows | null, keys: GateKeys, label: string): Verdict | null {
  if (rows === null) return null;
  const id = String(rows.debate.id);
  const verdict = verifyRows(rows);
  if (verdict.state === 'broken') {
    throw new IntegrityError('SEAL_GATE_BROKEN', `${label} does not match its hashes (${describeBreak(verdict)}), so nothing was written or signed over it.`, {
      hint: `Run \`conclave verify ${id}\` for details, and restore the record from a backup, or import a signed bundle of it into another database (\`conclave import FILE --public-key PUB --db OTHER.db\`: this one keeps the altered copy, and refuses a second).`,
    });
  }
  const seal = (rows.debate.seal as string | null | undefined) ?? null;
  const signature = typeof rows.debate.seal_signature === 'string' && rows.debate.seal_signature !== '' ? rows.debate.seal_signature : null;
  const keyId = typeof rows.debate.seal_key === 'string' && rows.debate.seal_key !== '' ? rows.debate.seal_key : null;

  if (keys.publicKey) {
    const problem = signatureProblem(seal, signature, keys.publicKey);
    if (problem !== null) {
      throw new IntegrityError('BUNDLE_NOT_SIGNED', `${label} is not signed by the given public key: ${problem}. Nothing was imported.`, {
        hint: "Only a record sealed with that key's private key passes. Ask whoever holds it for a bundle they signed, or check that you passed the right public key.",
      });
    }
    return verdict;
  }
  // A copied seal is not signed again: without a public key, its signature cannot be proved, only kept.
  if (keys.signer === undefined) return verdict;

  continueSignature({ seal, signature, keyId }, keys.signer ?? null, label, {
    id,
    keyFrom: '--sign-key FILE or CONCLAVE_SIGNING_KEY',
    what: 'record',
    restore: 'restore the record from a backup, or import a signed bundle of it into another database (`conclave import FILE --public-key PUB --db OTHER.db`)',
    unset: 'without --sign-key and with CONCLAVE_SIGNING_KEY unset',
  });
  return verdict;
}

/** A seal's signature as its record holds it. */
export interface SealSignature {
  seal: string | null;
  signature: string | null;
  keyId: string | null;
}

/**
 * Refuses a write whose key cannot continue a record's signature: a signed record goes on only with
 * the key that signed it, and only while that signature holds; an unsigned one is not signed now (a
 * signature would vouch for rows that no key vouched for). Debates and bench runs both pass here;
 * `advice` words the fixes for each.
 */
export function continueSignature(
  held: SealSignature,
  signer: SealSigner | null,
  label: string,
  advice: { id: string; keyFrom: string; what: 'record' | 'run'; restore: string; unset: string },
): void {
  const { seal, signature, keyId } = held;
  const short = (k: string): string => k.slice(0, 16);
  if (signature !== null || keyId !== null) {
    if (signer === null) {
      throw new InputError('SIGNING_KEY_REQUIRED', `${label} is signed by key ${short(keyId ?? '?')}; going on without that key would leave it unsigned.`, {
        hint: `Pass the same private key with ${advice.keyFrom}.`,
      });
    }
    if (keyId !== signer.keyId) {
      throw new InputError('SIGNING_KEY_MISMATCH', `${label} is signed by key ${short(keyId ?? '?')}, not by the key given (${short(signer.keyId)}).`, {
        hint: `Pass the private key that signed it with ${advice.keyFrom}; a ${advice.what} keeps one key from start to end.`,
      });
    }
    if (signature === null || seal === null || !signer.verify(seal, signature)) {
      throw new IntegrityError('SEAL_SIGNATURE_INVALID', `${label} names key ${short(keyId)}, but its seal is not signed by it: it was re-sealed without the private key. Nothing was written or signed over it.`, {
        hint: `Run \`conclave verify ${advice.id} --public-key PUB\` to confirm, and ${advice.restore}.`,
      });
    }
    return;
  }
  if (signer !== null) {
    throw new InputError('SEAL_NOT_SIGNED', `${label} is not signed, so signing it now with key ${short(signer.keyId)} would vouch for rows that no key vouched for (anyone who can write the file can rewrite an unsigned seal).`, {
      hint: `Check it with \`conclave verify ${advice.id}\`. To go on with it unsigned, as it was recorded, run the command again ${advice.unset}.`,
    });
  }
}
