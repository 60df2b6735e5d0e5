ALTER TABLE `calls` ADD `prev_hash` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `hash` text;--> statement-breakpoint
ALTER TABLE `debates` ADD `seal` text;--> statement-breakpoint
ALTER TABLE `debates` ADD `seal_rows_json` text;