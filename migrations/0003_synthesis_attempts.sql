CREATE TABLE `synthesis_attempts` (
	`debate_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`model` text NOT NULL,
	`status` text NOT NULL,
	`body_json` text,
	`error` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `attempt`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `bench_calls` ADD `normalized_json` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `normalized_json` text;