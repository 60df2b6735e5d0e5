ALTER TABLE `result_quality` ADD `has_trade_offs` integer;--> statement-breakpoint
ALTER TABLE `result_quality` ADD `constraint_count` integer;