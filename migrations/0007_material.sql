CREATE TABLE `attachments` (
	`debate_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`name` text NOT NULL,
	`bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`content` text NOT NULL,
	PRIMARY KEY(`debate_id`, `ordinal`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `budget_decisions` (
	`debate_id` text NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`stage` text,
	`round` integer NOT NULL,
	`agent_id` text,
	`detail` text NOT NULL,
	`used` integer NOT NULL,
	`limit_tokens` integer NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `seq`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `calls` ADD `material_json` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `budget_json` text;