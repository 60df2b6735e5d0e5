import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import { InputError } from '../errors.js';

// Signed seals (docs/record.md, "Signed seals"): an Ed25519 signature over the seal's text. A hash
// chain shows that a record was not changed by someone who did not recompute it; a signature shows
// that the seal was written by the holder of the private key, which a forger with the file lacks.

/** Signs seals with one private key. */
export interface SealSigner {
  /** sha256 of the public key (SPKI DER), hex: names the key in the record. */
  keyId: string;
  sign(seal: string): string;
  /** Whether `signature` is this key's signature of `seal`: what continuing a signed record checks first. */
  verify(seal: string, signature: string): boolean;
}

/** The id of a public key: sha256 of its SPKI DER encoding, hex. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}

/** A new Ed25519 key pair, both PEM-encoded. */
export function newKeyPair(): { privateKeyPem: string; publicKeyPem: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: keyIdOf(publicKey),
  };
}

/** A signer from a PEM private key; `source` names the file in messages. */
export function signerFromPem(pem: string, source: string): SealSigner {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (err) {
    throw new InputError('SIGNING_KEY_INVALID', `${source} is not a private key Conclave can read (${(err as Error).message}).`, {
      hint: 'Make a key pair with `conclave keys init` and pass its private key with --sign-key or CONCLAVE_SIGNING_KEY.',
    });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new InputError('SIGNING_KEY_INVALID', `${source} is a ${key.asymmetricKeyType ?? 'unknown'} key; seals are signed with Ed25519 keys.`, {
      hint: 'Make a key pair with `conclave keys init`.',
    });
  }
  const publicKey = createPublicKey(key);
  const keyId = keyIdOf(publicKey);
  return {
    keyId,
    sign: (seal) => sign(null, Buffer.from(seal, 'utf8'), key).toString('base64'),
    verify: (seal, signature) => signatureProblem(seal, signature, publicKey) === null,
  };
}

/** A public key from PEM, checked to be Ed25519; `source` names the file in messages. */
export function publicKeyFromPem(pem: string, source: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new InputError('PUBLIC_KEY_INVALID', `${source} is not a public key Conclave can read (${(err as Error).message}).`, {
      hint: 'Pass the `conclave-seal.pub` file written by `conclave keys init`.',
    });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new InputError('PUBLIC_KEY_INVALID', `${source} is a ${key.asymmetricKeyType ?? 'unknown'} key; seals are signed with Ed25519 keys.`, {
      hint: 'Pass the `conclave-seal.pub` file written by `conclave keys init`.',
    });
  }
  return key;
}

/** Why a seal's signature does not prove it was written by `publicKey`'s holder, or null when it does. */
export function signatureProblem(seal: string | null | undefined, signature: unknown, publicKey: KeyObject): string | null {
  if (seal === null || seal === undefined) return 'it has no seal to sign';
  if (typeof signature !== 'string' || signature === '') return 'its seal is not signed';
  let ok = false;
  try {
    ok = verify(null, Buffer.from(seal, 'utf8'), publicKey, Buffer.from(signature, 'base64'));
  } catch {
    ok = false;
  }
  return ok ? null : 'its seal is not signed by this key (re-sealed without the private key, or signed by another key)';
}
