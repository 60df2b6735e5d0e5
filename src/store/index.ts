export { defaultDbPath, openStore, type OpenStoreOptions } from './open.js';
export {
  Store,
  presetHash,
  type DebateFinish,
  type DebateRecord,
  type DebateSummary,
  type ListOptions,
  type NewDebate,
  type StoredCall,
  type StoredDebate,
} from './store.js';
