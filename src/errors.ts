/**
 * Every failure a user can cause or meet is a ConclaveError: a stable `code`,
 * a message naming the offending thing, and a `hint` saying what to do.
 */
export class ConclaveError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  /** Process exit code the CLI uses for this error. */
  readonly exitCode: number;

  constructor(code: string, message: string, options: { hint?: string; cause?: unknown; exitCode?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConclaveError';
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? 1;
  }
}

/** Bad flags, bad preset, bad file: the user can fix the input. Exit code 2. */
export class InputError extends ConclaveError {
  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, { ...options, exitCode: 2 });
    this.name = 'InputError';
  }
}

/** The Ollama host cannot be used: unreachable, missing model, server error. Exit code 3. */
export class HostError extends ConclaveError {
  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, { ...options, exitCode: 3 });
    this.name = 'HostError';
  }
}

/** The record (SQLite) cannot be opened or written. Exit code 4. */
export class StoreError extends ConclaveError {
  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, { ...options, exitCode: 4 });
    this.name = 'StoreError';
  }
}

/** A debate ran but could not reach a result (e.g. too few usable answers). Exit code 5. */
export class DebateFailedError extends ConclaveError {
  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, { ...options, exitCode: 5 });
    this.name = 'DebateFailedError';
  }
}

/** A recorded debate, or a bundle of one, does not match its hashes: it changed after it was written. Exit code 6. */
export class IntegrityError extends ConclaveError {
  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, { ...options, exitCode: 6 });
    this.name = 'IntegrityError';
  }
}

/** The user stopped the run (Ctrl-C). Exit code 130, as shells expect. */
export class InterruptedError extends ConclaveError {
  /** The debate that was stopped, when one had started: what `resume` takes. */
  readonly debateId: string | null;
  constructor(message = 'Interrupted.', options: { hint?: string; debateId?: string } = {}) {
    super('INTERRUPTED', message, { ...(options.hint === undefined ? {} : { hint: options.hint }), exitCode: 130 });
    this.name = 'InterruptedError';
    this.debateId = options.debateId ?? null;
  }
}

export function isConclaveError(err: unknown): err is ConclaveError {
  return err instanceof ConclaveError;
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
