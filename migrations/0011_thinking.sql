ALTER TABLE `calls` ADD `think` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `thinking` text;--> statement-breakpoint
ALTER TABLE `calls` ADD `thinking_tokens` integer;