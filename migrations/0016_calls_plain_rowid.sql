-- `calls` keeps its ids but loses AUTOINCREMENT: with it every recorded call also rewrote the
-- `sqlite_sequence` page, one page in six of a lone call's transaction. Calls are never deleted,
-- so a plain INTEGER PRIMARY KEY gives the same next id (the largest plus one). The rows are
-- copied with their ids, so the chain, the seals and every link to a call stay as they were.
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_calls` (
	`id` integer PRIMARY KEY NOT NULL,
	`debate_id` text NOT NULL,
	`stage` text NOT NULL,
	`round` integer NOT NULL,
	`agent_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`host` text NOT NULL,
	`api` text,
	`model` text NOT NULL,
	`messages_json` text NOT NULL,
	`options_json` text NOT NULL,
	`format_json` text,
	`raw` text NOT NULL,
	`parsed_json` text,
	`status` text NOT NULL,
	`validation_error` text,
	`normalized_json` text,
	`error` text,
	`truncation` text,
	`material_json` text,
	`budget_json` text,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`total_duration_ns` integer,
	`load_duration_ns` integer,
	`prompt_eval_duration_ns` integer,
	`eval_duration_ns` integer,
	`done_reason` text,
	`started_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	`partial` integer,
	`think` text,
	`thinking` text,
	`thinking_tokens` integer,
	`prev_hash` text,
	`hash` text,
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_calls`("id", "debate_id", "stage", "round", "agent_id", "attempt", "host", "api", "model", "messages_json", "options_json", "format_json", "raw", "parsed_json", "status", "validation_error", "normalized_json", "error", "truncation", "material_json", "budget_json", "prompt_tokens", "completion_tokens", "total_duration_ns", "load_duration_ns", "prompt_eval_duration_ns", "eval_duration_ns", "done_reason", "started_at", "finished_at", "partial", "think", "thinking", "thinking_tokens", "prev_hash", "hash") SELECT "id", "debate_id", "stage", "round", "agent_id", "attempt", "host", "api", "model", "messages_json", "options_json", "format_json", "raw", "parsed_json", "status", "validation_error", "normalized_json", "error", "truncation", "material_json", "budget_json", "prompt_tokens", "completion_tokens", "total_duration_ns", "load_duration_ns", "prompt_eval_duration_ns", "eval_duration_ns", "done_reason", "started_at", "finished_at", "partial", "think", "thinking", "thinking_tokens", "prev_hash", "hash" FROM `calls`;--> statement-breakpoint
DROP TABLE `calls`;--> statement-breakpoint
ALTER TABLE `__new_calls` RENAME TO `calls`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `calls_debate_round_idx` ON `calls` (`debate_id`,`round`);