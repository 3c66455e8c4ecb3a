DROP INDEX objects_marked;
ALTER TABLE objects DROP COLUMN marked;
