-- meta is the single row holding the current revision (every write transaction locks it first, so
-- revisions commit in order, across replicas), the compacted revision, and how far compaction has
-- deleted history.
CREATE TABLE meta (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    current          BIGINT  NOT NULL,
    compacted        BIGINT  NOT NULL,
    compact_progress BIGINT  NOT NULL
);
INSERT INTO meta (id, current, compacted, compact_progress) VALUES (1, 0, 0, 0);

-- revisions is the append-only log: one row per write. op: 1 create, 2 update, 3 delete.
-- prev_revision is the key's previous row (0 for a create). Key columns use COLLATE "C" so that
-- (namespace, name) order is byte order, as in Go and SQLite.
CREATE TABLE revisions (
    revision      BIGINT   PRIMARY KEY,
    resource      TEXT     COLLATE "C" NOT NULL,
    namespace     TEXT     COLLATE "C" NOT NULL,
    name          TEXT     COLLATE "C" NOT NULL,
    op            SMALLINT NOT NULL,
    prev_revision BIGINT   NOT NULL,
    value         BYTEA    NOT NULL
);
CREATE INDEX revisions_key ON revisions (resource, namespace, name, revision);

-- objects is the live set: every existing key and the revision of its latest log row, whose value
-- it is (values are stored once).
CREATE TABLE objects (
    resource  TEXT   COLLATE "C" NOT NULL,
    namespace TEXT   COLLATE "C" NOT NULL,
    name      TEXT   COLLATE "C" NOT NULL,
    revision  BIGINT NOT NULL,
    PRIMARY KEY (resource, namespace, name)
);
