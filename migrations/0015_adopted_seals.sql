-- Debates listed as legacy are read, and sealed as they stand, by the code that applies this
-- migration (src/store/adopt.ts): the list itself goes, since a list anyone can insert into decides nothing.
DROP TABLE `legacy_debates`;--> statement-breakpoint
ALTER TABLE `debates` ADD `adopted_at` integer;
