DROP TABLE objects;
DROP TABLE revisions;
DROP TABLE meta;
