CREATE TABLE `seal_rows` (
	`debate_id` text NOT NULL,
	`table_name` text NOT NULL,
	`digests_json` text NOT NULL,
	PRIMARY KEY(`debate_id`, `table_name`),
	FOREIGN KEY (`debate_id`) REFERENCES `debates`(`id`) ON UPDATE no action ON DELETE cascade
);
