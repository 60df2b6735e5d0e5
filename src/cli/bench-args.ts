/** The command lines of `bench` and its subcommands, as yargs hands them to their handlers. */

export interface BenchRunArgs {
  suite?: string;
  preset?: string[];
  resume?: string;
  limit?: number;
  seed?: number;
  concurrency?: number;
  'num-parallel'?: number;
  think?: ('on' | 'off')[];
  host?: string;
  api?: 'ollama' | 'openai';
  'api-key-env'?: string;
  embedded?: string;
  hosts?: string;
  db?: string;
  json?: boolean;
  events?: boolean;
  quiet?: boolean;
  /** `--fail-under CONDITION=ACCURACY`, repeatable: exit 7 when a condition's accuracy is below it. */
  'fail-under'?: string[];
  /** Print what the run would call and an estimate; call no model, record nothing. */
  'dry-run'?: boolean;
}

export interface BenchReportArgs {
  run: string;
  format: 'md' | 'json' | 'html';
  out?: string;
  db?: string;
}

export interface BenchCompareArgs {
  a: string;
  b: string;
  format: 'md' | 'json';
  db?: string;
}

export interface BenchImportArgs {
  kind: 'gsm8k' | 'mmlu';
  file: string;
  out?: string;
}

export interface BenchListArgs {
  db?: string;
  json?: boolean;
}

/** `conclave rescore ID|RUN`. */
export interface RescoreArgs {
  target: string;
  rule?: string[];
  json?: boolean;
  db?: string;
}
