CREATE TABLE `legacy_debates` (
	`debate_id` text PRIMARY KEY NOT NULL
);
--> statement-breakpoint
ALTER TABLE `calls` ADD `partial` integer;--> statement-breakpoint
ALTER TABLE `debates` ADD `seal_signature` text;--> statement-breakpoint
ALTER TABLE `debates` ADD `seal_key` text;--> statement-breakpoint
-- Debates recorded before checkpoints (no seal yet) keep the rules they were written under.
INSERT INTO `legacy_debates` (`debate_id`) SELECT `id` FROM `debates` WHERE `seal` IS NULL;
