-- marked is 1 for the objects the store's Mark function picked when they were written (the
-- server marks those its garbage collector follows), so that a start-up lists them through the
-- partial index instead of reading every row. Rows written before this column existed are
-- marked: a marked list may return more than Mark picked, never less.
ALTER TABLE objects ADD COLUMN marked INTEGER NOT NULL DEFAULT 1;
CREATE INDEX objects_marked ON objects (resource, namespace, name) WHERE marked = 1;
