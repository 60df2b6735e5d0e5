CREATE TABLE `bench_answers` (
	`trial_id` integer NOT NULL,
	`source` text NOT NULL,
	`round` integer NOT NULL,
	`slot` text NOT NULL,
	`agent_id` text NOT NULL,
	`model` text NOT NULL,
	`status` text NOT NULL,
	`answer` text,
	`method` text,
	`correct` integer NOT NULL,
	PRIMARY KEY(`trial_id`, `source`, `round`, `slot`),
	FOREIGN KEY (`trial_id`) REFERENCES `bench_trials`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bench_calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`trial_id` integer NOT NULL,
	`condition` text NOT NULL,
	`sample` integer NOT NULL,
	`agent_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`host` text NOT NULL,
	`model` text NOT NULL,
	`messages_json` text NOT NULL,
	`options_json` text NOT NULL,
	`format_json` text,
	`raw` text NOT NULL,
	`parsed_json` text,
	`status` text NOT NULL,
	`validation_error` text,
	`error` text,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`total_duration_ns` integer,
	`load_duration_ns` integer,
	`prompt_eval_duration_ns` integer,
	`eval_duration_ns` integer,
	`done_reason` text,
	`started_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	FOREIGN KEY (`trial_id`) REFERENCES `bench_trials`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `bench_calls_trial_idx` ON `bench_calls` (`trial_id`);--> statement-breakpoint
CREATE TABLE `bench_items` (
	`run_id` text NOT NULL,
	`item_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`question` text NOT NULL,
	`answer` text NOT NULL,
	`kind` text NOT NULL,
	`choices_json` text,
	PRIMARY KEY(`run_id`, `item_id`),
	FOREIGN KEY (`run_id`) REFERENCES `bench_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bench_results` (
	`trial_id` integer NOT NULL,
	`condition` text NOT NULL,
	`variant` text DEFAULT '' NOT NULL,
	`available` integer NOT NULL,
	`answer` text,
	`correct` integer NOT NULL,
	`calls` integer NOT NULL,
	`prompt_tokens` integer NOT NULL,
	`completion_tokens` integer NOT NULL,
	`call_ids_json` text NOT NULL,
	`note` text,
	PRIMARY KEY(`trial_id`, `condition`, `variant`),
	FOREIGN KEY (`trial_id`) REFERENCES `bench_trials`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bench_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`suite` text NOT NULL,
	`suite_hash` text NOT NULL,
	`item_count` integer NOT NULL,
	`presets_json` text NOT NULL,
	`seed` integer NOT NULL,
	`item_limit` integer,
	`host` text NOT NULL,
	`concurrency` integer NOT NULL,
	`num_parallel` integer NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`engine_version` text NOT NULL,
	`pid` integer NOT NULL,
	`hostname` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `bench_runs_created_at_idx` ON `bench_runs` (`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `bench_trials` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` text NOT NULL,
	`item_id` text NOT NULL,
	`preset` text NOT NULL,
	`status` text NOT NULL,
	`debate_id` text,
	`debate_status` text,
	`exit_reason` text,
	`rounds_run` integer,
	`max_rounds` integer NOT NULL,
	`agent_turns` integer,
	`error` text,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `bench_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `bench_trials_run_item_idx` ON `bench_trials` (`run_id`,`item_id`,`preset`);--> statement-breakpoint
CREATE TABLE `vote_artifacts` (
	`debate_id` text NOT NULL,
	`iteration` integer NOT NULL,
	`artifact_id` text NOT NULL,
	`author_id` text NOT NULL,
	`author_cluster` text,
	`origin` text NOT NULL,
	`source_round` integer,
	`text` text NOT NULL,
	PRIMARY KEY(`debate_id`, `iteration`, `artifact_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `vote_tiers` (
	`debate_id` text NOT NULL,
	`iteration` integer NOT NULL,
	`artifact_id` text NOT NULL,
	`rank` integer NOT NULL,
	`tier` text NOT NULL,
	`action` text NOT NULL,
	`author_cluster` text,
	`approval_set_json` text NOT NULL,
	`unrated_clusters_json` text NOT NULL,
	`dissenting_clusters_json` text NOT NULL,
	`agreement_ratio` real NOT NULL,
	`full_consensus` integer NOT NULL,
	`score` real NOT NULL,
	`spread` real,
	`balanced_score` real,
	`rank_score` real NOT NULL,
	`persuasive` integer NOT NULL,
	`persuaded_clusters_json` text NOT NULL,
	`reach` integer NOT NULL,
	`persuasion_kind` text,
	`yes` integer NOT NULL,
	`no` integer NOT NULL,
	`abstentions` integer NOT NULL,
	`clusters_json` text NOT NULL,
	PRIMARY KEY(`debate_id`, `iteration`, `artifact_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `votes` (
	`debate_id` text NOT NULL,
	`iteration` integer NOT NULL,
	`artifact_id` text NOT NULL,
	`voter_id` text NOT NULL,
	`voter_cluster` text,
	`vote` text NOT NULL,
	`reason` text,
	`raw` text NOT NULL,
	`parse_status` text NOT NULL,
	`error` text,
	`attempts` integer NOT NULL,
	`call_id` integer,
	`first_call_id` integer,
	PRIMARY KEY(`debate_id`, `iteration`, `artifact_id`, `voter_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`call_id`) REFERENCES `calls`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`first_call_id`) REFERENCES `calls`(`id`) ON UPDATE no action ON DELETE set null
);
