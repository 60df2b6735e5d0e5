CREATE TABLE `resumptions` (
	`debate_id` text NOT NULL,
	`ordinal` integer NOT NULL,
	`from_round` integer NOT NULL,
	`calls_before` integer NOT NULL,
	`host` text NOT NULL,
	`plan_json` text,
	`pid` integer NOT NULL,
	`hostname` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `ordinal`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
