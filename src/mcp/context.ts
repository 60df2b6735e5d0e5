import type { CliIO } from '../cli/io.js';
import type { Store } from '../store/store.js';
import type { RunRegistry } from './runs.js';

/** What the tools share: the record, the runs of this process, where debates go. */
export interface McpContext {
  store: Store;
  runs: RunRegistry;
  /** The command's IO with standard output taken away: stdout is the protocol's. */
  io: CliIO;
  host: string | undefined;
  hosts: string | undefined;
  log: (line: string) => void;
  /** `--allow-dir`: the only folders attachments and preset files may come from. */
  allowDirs: readonly string[];
  trustPresetHosts: boolean;
}
