-- A live-class SQLite store as tfviz wrote it before the schema had a version ("schema 0",
-- written by the code of 99b3caf: one live class with three answers, one ended class whose
-- answers were dropped when it ended, two rate-limit rows). tests/test_classroom_schema.py
-- loads it and checks that today's code upgrades it. Teacher key of TJH2V9WJ: lJMPxcJqSN0sHQfOwL904g.
BEGIN TRANSACTION;
CREATE TABLE answers (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL,
    exercise TEXT NOT NULL,
    box TEXT NOT NULL,
    correct INTEGER NOT NULL,
    slip TEXT,
    t REAL NOT NULL
);
INSERT INTO "answers" VALUES(1,'TJH2V9WJ','layernorm','std',0,'variance',1800000015.0);
INSERT INTO "answers" VALUES(2,'TJH2V9WJ','layernorm','std',1,NULL,1800000020.0);
INSERT INTO "answers" VALUES(3,'TJH2V9WJ','flying-arrows','weights',0,'no_scale',1800000025.0);
CREATE TABLE budget (kind TEXT NOT NULL, client TEXT NOT NULL, t REAL NOT NULL);
INSERT INTO "budget" VALUES('start','teacher-1',1800000000.0);
INSERT INTO "budget" VALUES('start','teacher-2',1800000030.0);
CREATE TABLE classes (
    code TEXT PRIMARY KEY,
    status TEXT NOT NULL,            -- live, ended, expired
    last_teacher REAL NOT NULL,
    gone_at REAL,
    data TEXT NOT NULL               -- the teacher key, the state, when it started (JSON)
);
INSERT INTO "classes" VALUES('TJH2V9WJ','live',1800000010.0,NULL,'{"code": "TJH2V9WJ", "key": "lJMPxcJqSN0sHQfOwL904g", "state": {"code": "TJH2V9WJ", "lesson": "self-attention", "step": 0, "text": "flying arrows", "model": "", "layer": 1, "head": 2, "version": 2, "updated": 1800000005.0, "checkin": [], "checkin_phase": ""}, "started": 1800000000.0}');
INSERT INTO "classes" VALUES('38TV752G','ended',1800000045.0,1800000040.0,'{"code": "38TV752G", "key": "7eUkFk7QUiWil2JZJGP5HA", "state": {"code": "38TV752G", "lesson": "home", "step": 0, "text": "", "model": "", "layer": 0, "head": 0, "version": 1, "updated": 1800000030.0, "checkin": [], "checkin_phase": ""}, "started": 1800000030.0}');
CREATE INDEX classes_live ON classes (status, last_teacher);
CREATE INDEX answers_by_box ON answers (code, exercise, box);
CREATE INDEX budget_by_client ON budget (kind, client, t);
COMMIT;
