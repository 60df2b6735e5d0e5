import type { CallRecord } from '../events.js';
import type { StructuredOutcome } from '../structured-call.js';

/**
 * A request that never reached a model: its host refused or dropped the connection through
 * every resend. It says nothing about the model, so it ends the run `interrupted`, never `failed`.
 */
export function isOutage(outcome: StructuredOutcome<unknown>): boolean {
  return outcome.status === 'failed' && outcome.code === 'HOST_UNREACHABLE';
}

/** A recorded call that failed because its host could not be reached: `resume` asks it again. */
export function neverReached(call: Pick<CallRecord, 'status' | 'error'>): boolean {
  return call.status === 'error' && (call.error?.startsWith('HOST_UNREACHABLE') ?? false);
}

/** A request that never reached its host: which host, for which model. */
export interface Unreached {
  host: string;
  model: string;
}

/** Requests since the last checkpoint that reached their host, and those that never did (after their resends and any other host of the pool). */
export class OutageCount {
  unreachable: Unreached[] = [];
  reached = 0;

  /** Counted once per request, after its resends: only a request that never reached its host is an outage. */
  count(outcome: StructuredOutcome<unknown>, model: string): void {
    if (outcome.status !== 'failed' || !isOutage(outcome)) {
      this.reached++;
      return;
    }
    const host = outcome.host ?? '';
    if (!this.unreachable.some((u) => u.host === host && u.model === model)) this.unreachable.push({ host, model });
  }

  /** What went away since the last checkpoint (null: nothing did); starts the next count. */
  takeHostDown(): Unreached[] | null {
    const down = this.unreachable.length > 0 ? this.unreachable : null;
    this.unreachable = [];
    this.reached = 0;
    return down;
  }
}

/** What stopped answering, named as the plan knows its servers (an Ollama host, an OpenAI-compatible server, or a pool of both), and how to start it again. */
export function outageWords(hosts: readonly { api?: string }[]): { detail: string; restart: string } {
  const apis = new Set(hosts.map((h) => h.api ?? 'ollama'));
  if (apis.size === 1 && apis.has('ollama')) return { detail: 'the Ollama host stopped answering', restart: '`ollama serve`' };
  if (apis.size === 1 && apis.has('openai')) return { detail: 'the OpenAI-compatible server stopped answering', restart: 'vllm serve, llama-server, or whichever server it was' };
  return { detail: 'a model server stopped answering', restart: 'the one that stopped' };
}

/**
 * Why a run stops on an outage, and how to go on: in a pool, each host that went and the models no
 * host left serves (with who uses them, from `usedBy`); else the lone server, as `outageWords` names it.
 */
export function outageStop(hosts: readonly { url: string; api?: string }[], unreached: readonly Unreached[], usedBy: Record<string, string[]>): { detail: string; fix: string } {
  const gone = [...new Set(unreached.map((u) => u.host))].filter((h) => h !== '');
  const left = hosts.filter((h) => gone.includes(h.url));
  const { detail, restart } = outageWords(left.length > 0 ? left : hosts);
  if (hosts.length < 2 || gone.length === 0) return { detail, fix: `Start the server again (${restart})` };
  const models = [...new Set(unreached.map((u) => u.model))].map((m) => `\`${m}\`${usedBy[m]?.length ? ` (${usedBy[m].join(', ')})` : ''}`);
  return {
    detail: `${gone.join(' and ')} stopped answering, and no host left in the pool serves ${models.join(', ')}`,
    fix: `Start the server again (${restart}), or serve ${models.length === 1 ? 'that model' : 'those models'} on a host of the pool`,
  };
}
