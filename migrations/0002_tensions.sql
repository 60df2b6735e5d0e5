CREATE TABLE `tension_claims` (
	`debate_id` text NOT NULL,
	`claim_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`agent_id` text NOT NULL,
	`text` text NOT NULL,
	`source` text NOT NULL,
	PRIMARY KEY(`debate_id`, `claim_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tension_consensus` (
	`debate_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`claim` text NOT NULL,
	`supporting_agents_json` text NOT NULL,
	`confidence` real NOT NULL,
	`load_bearing` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `ordinal`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tensions` (
	`debate_id` text NOT NULL,
	`tension_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`agent_a` text NOT NULL,
	`agent_b` text NOT NULL,
	`claim_a_id` text NOT NULL,
	`claim_b_id` text NOT NULL,
	`claim_a` text NOT NULL,
	`claim_b` text NOT NULL,
	`type` text NOT NULL,
	`severity` integer NOT NULL,
	`load_bearing` integer NOT NULL,
	`resolvable` integer NOT NULL,
	`recommendation` text NOT NULL,
	`resolution` text NOT NULL,
	PRIMARY KEY(`debate_id`, `tension_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tension_exchanges` (
	`debate_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`tension_id` text NOT NULL,
	`opponent_id` text NOT NULL,
	`own_claim` text NOT NULL,
	`opposing_claim` text NOT NULL,
	`question` text NOT NULL,
	`reason` text NOT NULL,
	`prompt` text NOT NULL,
	`status` text NOT NULL,
	`response` text,
	`stance` text,
	`revised_claim` text,
	`confidence` real,
	`error` text,
	PRIMARY KEY(`debate_id`, `agent_id`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tension_maps` (
	`debate_id` text PRIMARY KEY NOT NULL,
	`version` integer NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`round` integer,
	`headline` text,
	`major_findings_json` text,
	`open_questions_json` text,
	`confidence_json` text,
	`flagged` integer DEFAULT false NOT NULL,
	`review_reasons_json` text,
	`answer_tokens` integer,
	`pairs_compared` integer,
	`pairs_total` integer,
	`gaps_json` text,
	`round2_tension_id` text,
	`round2_question` text,
	`generated_at` integer NOT NULL,
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tension_maps_flagged_idx` ON `tension_maps` (`flagged`);