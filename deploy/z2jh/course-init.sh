#!/usr/bin/env bash
# Init container of the formgrader service (formgrader.yaml), grader image, as the notebook user:
# fills the course folder on its volume from the image's copy of the course, the way
# instructor/classroom/hub.py's copy_course does on one machine: missing files only (an instructor's
# edits, the gradebook, submitted/ and autograded/ stay), then ngshare's exchange in its
# nbgrader_config.py, once.
set -euo pipefail
SRC="${INPLACE_SRC:-/opt/inplace-course}"
COURSE="${INPLACE_COURSE:-/srv/inplace/course}"
BLOCK="${INPLACE_BLOCK:-$SRC/deploy/z2jh/nbgrader_config_grader.py}"
MARKER="# --- Zero to JupyterHub (deploy/z2jh/nbgrader_config_grader.py)"

mkdir -p "$COURSE"
cp -r --no-clobber "$SRC/." "$COURSE/"
if ! grep -qF "$MARKER" "$COURSE/nbgrader_config.py"; then
  printf '\n' >> "$COURSE/nbgrader_config.py"
  cat "$BLOCK" >> "$COURSE/nbgrader_config.py"
fi
chmod 0700 "$COURSE"
echo "course folder ready: $COURSE"
