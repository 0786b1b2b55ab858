"""The service's own tables, beside nbgrader's in the same database.

Their shape is changed only by a migration (``grader/service/records/migrations``,
applied by ``schema.upgrade``); these definitions are what the code reads and
writes, and ``tests/service/records/test_schema.py`` checks that the migrations
produce exactly them.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

metadata = sa.MetaData()

users = sa.Table(
    "grader_users",
    metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
)
tokens = sa.Table(
    "grader_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(128), sa.ForeignKey("grader_users.id"), nullable=False, index=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("revoked_at", sa.DateTime, nullable=True),
    sa.Column("label", sa.String(128), nullable=False, server_default=""),  # what it is for ("serve", "roster")
    sa.Column("expires_at", sa.DateTime, nullable=True),  # None: until revoked
)
submissions = sa.Table(
    "grader_submissions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("student", sa.String(128), nullable=False, index=True),
    sa.Column("assignment", sa.String(128), nullable=False, index=True),
    sa.Column("received_at", sa.DateTime, nullable=False),
    # where the notebook's bytes are: a file path, or "database:<sha256>" (``files``)
    sa.Column("path", sa.String(1024), nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("score", sa.Float, nullable=True),
    sa.Column("max_score", sa.Float, nullable=True),
    sa.Column("late_penalty", sa.Float, nullable=True),
    sa.Column("results", sa.Text, nullable=True),
    sa.Column("graded_at", sa.DateTime, nullable=True),
)
jobs = sa.Table(
    "grader_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("submission_id", sa.Integer, sa.ForeignKey("grader_submissions.id"), nullable=False, index=True),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    # claims so far: a worker that dies holding the job still used one (``leases``)
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("enqueued_at", sa.DateTime, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    sa.Column("error", sa.Text, nullable=False, default=""),
    sa.Column("worker", sa.String(255), nullable=True),  # who holds (or last held) the job
    sa.Column("heartbeat_at", sa.DateTime, nullable=True),  # the holder's last sign of life
    sa.Column("published_at", sa.DateTime, nullable=True),  # the last wake-up sent to the broker
)
files = sa.Table(
    "grader_files",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
workers = sa.Table(
    "grader_workers",
    metadata,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("concurrency", sa.Integer, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=False),
    sa.Column("heartbeat_at", sa.DateTime, nullable=False),
    sa.Column("stopped_at", sa.DateTime, nullable=True),
)

# course settings changed on the dashboard that every worker must apply (the late policy)
settings = sa.Table(
    "grader_settings",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


# --- LTI 1.3 (grader.service.lti) ---------------------------------------------------
# an LMS registered with ``grader lti add-platform``; deployment_ids: a JSON list
lti_platforms = sa.Table(
    "grader_lti_platforms",
    metadata,
    sa.Column("issuer", sa.String(255), primary_key=True),
    sa.Column("client_id", sa.String(255), nullable=False),
    sa.Column("auth_url", sa.String(1024), nullable=False),
    sa.Column("token_url", sa.String(1024), nullable=False),
    sa.Column("jwks_url", sa.String(1024), nullable=False),
    sa.Column("deployment_ids", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
# the tool's own RSA signing key (generated once; its public half is /lti/jwks.json)
lti_keys = sa.Table(
    "grader_lti_keys",
    metadata,
    sa.Column("kid", sa.String(64), primary_key=True),
    sa.Column("private_pem", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
# one OIDC login: its state and nonce, each usable by exactly one launch
lti_logins = sa.Table(
    "grader_lti_logins",
    metadata,
    sa.Column("state", sa.String(64), primary_key=True),
    sa.Column("nonce", sa.String(64), nullable=False, unique=True),
    sa.Column("issuer", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("used_at", sa.DateTime, nullable=True),
)
# an LMS course (context) the tool was launched from: where its roster (NRPS) and line items (AGS) live;
# written at every launch, read by roster sync and grade passback; lineitem_scopes: a JSON list
lti_contexts = sa.Table(
    "grader_lti_contexts",
    metadata,
    sa.Column("issuer", sa.String(255), primary_key=True),
    sa.Column("context_id", sa.String(255), primary_key=True),
    sa.Column("deployment_id", sa.String(255), nullable=False),
    sa.Column("title", sa.String(255), nullable=False, server_default=""),
    sa.Column("memberships_url", sa.String(1024), nullable=True),
    sa.Column("lineitems_url", sa.String(1024), nullable=True),
    sa.Column("lineitem_scopes", sa.Text, nullable=False, server_default="[]"),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)
# an LMS user and the course user id they map to, fixed at first sight (a re-sync never changes it);
# status: active | dropped (a dropped member keeps their grades: never deleted)
lti_members = sa.Table(
    "grader_lti_members",
    metadata,
    sa.Column("issuer", sa.String(255), primary_key=True),
    sa.Column("lms_user_id", sa.String(255), primary_key=True),
    sa.Column("user_id", sa.String(128), nullable=False, unique=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("name", sa.String(255), nullable=False, server_default=""),
    sa.Column("email", sa.String(255), nullable=False, server_default=""),
    sa.Column("status", sa.String(16), nullable=False, server_default="active"),
    sa.Column("synced_at", sa.DateTime, nullable=False),
    sa.Column("dropped_at", sa.DateTime, nullable=True),
)
# --- LTI Assignment and Grade Services (grader.service.lti.ags, grader.service.lti.outbox) ---
# an assignment's line item in an LMS course: found (by resourceId) or created once, then reused;
# forgotten (and found or created again) when the LMS answers that it was deleted
lti_line_items = sa.Table(
    "grader_lti_line_items",
    metadata,
    sa.Column("issuer", sa.String(255), primary_key=True),
    sa.Column("context_id", sa.String(255), primary_key=True),
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("url", sa.String(1024), nullable=False),
    sa.Column("score_maximum", sa.Float, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
# the score outbox: one row per change of a student's counting final score, sent by ``outbox.drain``;
# status: pending (retried at next_try_at) | sent | failed (the LMS refused: error holds its answer) |
# superseded (a newer score of the same student and assignment was sent instead)
lti_scores = sa.Table(
    "grader_lti_scores",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("student", sa.String(128), nullable=False),
    sa.Column("assignment", sa.String(128), nullable=False),
    sa.Column("score_given", sa.Float, nullable=False),
    sa.Column("score_maximum", sa.Float, nullable=False),
    sa.Column("activity_progress", sa.String(32), nullable=False),
    sa.Column("grading_progress", sa.String(32), nullable=False),
    sa.Column("recorded_at", sa.DateTime, nullable=False),  # the AGS timestamp (naive UTC)
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_try_at", sa.DateTime, nullable=False),
    sa.Column("error", sa.Text, nullable=False, server_default=""),
    sa.Column("sent_at", sa.DateTime, nullable=True),
    sa.Index("ix_grader_lti_scores_status_next", "status", "next_try_at"),
    sa.Index("ix_grader_lti_scores_student_assignment", "student", "assignment"),
)
# written answers graded by rubric (``grader.service.marking``): items staff edited, marks, and their audit
rubric_items = sa.Table(
    "grader_rubric_items",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("cell", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(8), primary_key=True),
    sa.Column("points", sa.Float, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
)
marks = sa.Table(
    "grader_marks",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("cell", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("notebook", sa.String(128), nullable=False),
    sa.Column("items", sa.Text, nullable=False),  # JSON: the keys applied
    sa.Column("adjustment", sa.Float, nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),  # the answer's SHA-256 when it was marked
    sa.Column("version", sa.Integer, nullable=False),  # 1 at the first save; a save names the one it started from
    sa.Column("marked_by", sa.String(128), nullable=False),
    sa.Column("marked_at", sa.DateTime, nullable=False),
    sa.Column("answer", sa.Text, nullable=True),  # the answer's text when it was marked (None: before 0008)
)
mark_audit = sa.Table(
    "grader_mark_audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("actor", sa.String(128), nullable=False),
    sa.Column("assignment", sa.String(128), nullable=False),
    sa.Column("cell", sa.String(128), nullable=False),
    sa.Column("student", sa.String(128), nullable=False),
    sa.Column("added", sa.Text, nullable=False),  # JSON: keys applied by this change
    sa.Column("removed", sa.Text, nullable=False),  # JSON: keys taken off
    sa.Column("old_score", sa.Float, nullable=True),
    sa.Column("new_score", sa.Float, nullable=True),  # None: graded again by a person
    sa.Column("what", sa.Text, nullable=False),
    sa.Column("previous_answer", sa.Text, nullable=True),  # a changed answer's text when it was marked
    sa.Index("ix_grader_mark_audit_question", "assignment", "cell", "student"),
)
# answers a TA grades apart from the identical ones they were grouped with
answer_splits = sa.Table(
    "grader_answer_splits",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("cell", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("split_by", sa.String(128), nullable=False),
    sa.Column("split_at", sa.DateTime, nullable=False),
)
# released to students (per question), until when they may ask for a regrade, and their requests
mark_releases = sa.Table(
    "grader_mark_releases",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("cell", sa.String(128), primary_key=True),
    sa.Column("released_by", sa.String(128), nullable=False),
    sa.Column("released_at", sa.DateTime, nullable=False),
    sa.Column("regrades_until", sa.DateTime, nullable=True),  # None: no regrade request may be made
)
regrade_requests = sa.Table(
    "grader_regrade_requests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("assignment", sa.String(128), nullable=False),
    sa.Column("cell", sa.String(128), nullable=False),
    sa.Column("student", sa.String(128), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("asked_at", sa.DateTime, nullable=False),
    sa.Column("score_asked", sa.Float, nullable=True),  # the question's score when the student asked
    sa.Column("reply", sa.Text, nullable=True),  # None: open
    sa.Column("replied_by", sa.String(128), nullable=True),
    sa.Column("replied_at", sa.DateTime, nullable=True),
    sa.Column("score_replied", sa.Float, nullable=True),  # the score when staff replied
    sa.UniqueConstraint("assignment", "cell", "student", name="uq_grader_regrade_requests_once"),
)
# which TA grades which question (of which range of student ids, inclusive; None: open-ended)
question_shares = sa.Table(
    "grader_question_shares",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("cell", sa.String(128), primary_key=True),
    sa.Column("ta", sa.String(128), primary_key=True),
    sa.Column("first_student", sa.String(128), nullable=True),
    sa.Column("last_student", sa.String(128), nullable=True),
)
# timed exams (``rules.exams``): accommodations (assignment "" = every exam) and each student's start and end
accommodations = sa.Table(
    "grader_accommodations",
    metadata,
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("multiplier", sa.Float, nullable=False),
    sa.Column("extra_minutes", sa.Float, nullable=False),
    sa.Column("opens", sa.DateTime, nullable=True),
    sa.Column("closes", sa.DateTime, nullable=True),
    sa.Column("note", sa.Text, nullable=False),
)
exam_starts = sa.Table(
    "grader_exam_starts",
    metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("started_at", sa.DateTime, nullable=False),  # the server's clock
    sa.Column("ends_at", sa.DateTime, nullable=False),  # moved only by staff's extension
    sa.Column("honour_at", sa.DateTime, nullable=True),
    sa.Column("address", sa.String(64), nullable=False),
    sa.Column("agent", sa.String(256), nullable=False),
)
exam_events = sa.Table(  # every start, extension and refusal, with the server's time: the student's evidence
    "grader_exam_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("assignment", sa.String(128), nullable=False),
    sa.Column("student", sa.String(128), nullable=False),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # start | extend | refused
    sa.Column("actor", sa.String(128), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Index("ix_grader_exam_events_student", "assignment", "student"),
)
