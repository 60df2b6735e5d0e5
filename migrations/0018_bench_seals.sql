CREATE TABLE `bench_seal_rows` (
	`run_id` text NOT NULL,
	`part` text NOT NULL,
	`digests_json` text NOT NULL,
	PRIMARY KEY(`run_id`, `part`),
	FOREIGN KEY (`run_id`) REFERENCES `bench_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bench_seals` (
	`run_id` text PRIMARY KEY NOT NULL,
	`seal` text NOT NULL,
	`seal_signature` text,
	`seal_key` text,
	`adopted_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `bench_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
