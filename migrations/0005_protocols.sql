CREATE TABLE `protocol_steps` (
	`debate_id` text NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`round` integer NOT NULL,
	`body_json` text NOT NULL,
	`after_call_id` integer,
	`at` integer NOT NULL,
	PRIMARY KEY(`debate_id`, `seq`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
