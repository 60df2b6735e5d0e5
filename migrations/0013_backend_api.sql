ALTER TABLE `bench_calls` ADD `api` text;--> statement-breakpoint
ALTER TABLE `bench_runs` ADD `hosts_json` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `api` text;