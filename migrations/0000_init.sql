CREATE TABLE `agents` (
	`debate_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`role` text NOT NULL,
	`ordinal` integer NOT NULL,
	`model` text NOT NULL,
	`digest` text,
	`persona` text,
	`cluster` text,
	PRIMARY KEY(`debate_id`, `role`, `agent_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`debate_id` text NOT NULL,
	`stage` text NOT NULL,
	`round` integer NOT NULL,
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
	`truncation` text,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`total_duration_ns` integer,
	`load_duration_ns` integer,
	`prompt_eval_duration_ns` integer,
	`eval_duration_ns` integer,
	`done_reason` text,
	`started_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `calls_debate_round_idx` ON `calls` (`debate_id`,`round`);--> statement-breakpoint
CREATE TABLE `debates` (
	`id` text PRIMARY KEY NOT NULL,
	`question` text NOT NULL,
	`preset_name` text NOT NULL,
	`preset_json` text NOT NULL,
	`preset_hash` text NOT NULL,
	`engine_version` text NOT NULL,
	`host` text NOT NULL,
	`status` text NOT NULL,
	`exit_reason` text,
	`error` text,
	`rounds_completed` integer DEFAULT 0 NOT NULL,
	`final_convergence` real,
	`plan_json` text,
	`pid` integer NOT NULL,
	`hostname` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `debates_created_at_idx` ON `debates` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `debates_status_created_at_idx` ON `debates` (`status`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `rounds` (
	`debate_id` text NOT NULL,
	`round` integer NOT NULL,
	`status` text NOT NULL,
	`recommendation` real,
	`facts` real,
	`caveats` real,
	`convergence` real,
	`rationale` text,
	`error` text,
	PRIMARY KEY(`debate_id`, `round`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `syntheses` (
	`debate_id` text PRIMARY KEY NOT NULL,
	`status` text NOT NULL,
	`body_json` text,
	`error` text,
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `turns` (
	`debate_id` text NOT NULL,
	`round` integer NOT NULL,
	`agent_id` text NOT NULL,
	`model` text NOT NULL,
	`status` text NOT NULL,
	`position` text,
	`confidence` real,
	`body_kind` text,
	`body_json` text,
	`error` text,
	PRIMARY KEY(`debate_id`, `round`, `agent_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
