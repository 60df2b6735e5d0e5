CREATE TABLE `result_quality` (
	`debate_id` text NOT NULL,
	`stage` text NOT NULL,
	`round` integer NOT NULL,
	`agent_id` text NOT NULL,
	`try` integer NOT NULL,
	`score` integer NOT NULL,
	`action` text NOT NULL,
	`reasons_json` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `stage`, `round`, `agent_id`, `try`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
