ALTER TABLE `calls` ADD `think` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `thinking` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `thinking_tokens` integer;--> statement-breakpoint
ALTER TABLE `debates` ADD `exit_detail` text;--> statement-breakpoint
CREATE INDEX `bench_trials_debate_idx` ON `bench_trials` (`debate_id`);