-- meta is the single row holding the current revision (every write transaction locks it first, so
-- revisions commit in order), the compacted revision, and how far compaction has deleted history.
CREATE TABLE meta (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    current          INTEGER NOT NULL,
    compacted        INTEGER NOT NULL,
    compact_progress INTEGER NOT NULL
);
INSERT INTO meta (id, current, compacted, compact_progress) VALUES (1, 0, 0, 0);

-- revisions is the append-only log: one row per write. op: 1 create, 2 update, 3 delete.
-- prev_revision is the key's previous row (0 for a create).
CREATE TABLE revisions (
    revision      INTEGER PRIMARY KEY,
    resource      TEXT    NOT NULL,
    namespace     TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    op            INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value         BLOB    NOT NULL
);
CREATE INDEX revisions_key ON revisions (resource, namespace, name, revision);

-- objects is the live set: every existing key and the revision of its latest log row, whose value
-- it is (values are stored once). SQLite's default BINARY collation orders keys by bytes, as Go
-- does.
CREATE TABLE objects (
    resource  TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
