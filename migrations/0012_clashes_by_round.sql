ALTER TABLE `tension_claims` ADD `round` integer;--> statement-breakpoint
ALTER TABLE `tensions` ADD `resolved_round` integer;--> statement-breakpoint
ALTER TABLE `tensions` ADD `conceded_by` text;