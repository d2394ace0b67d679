#!/usr/bin/env bash
# The course on The Littlest JupyterHub (TLJH), on one fresh Ubuntu/Debian VM, as root:
#
#   sudo ADMIN_NAME=instructor ROSTER=/root/class.csv bash deploy/tljh/install.sh
#
# run from a clone of the course. Idempotent: run it again after a `git pull` or a new class list.
# What it does, step by step (docs/deploying.md, "Beyond one machine", says what is tested):
#   1. system packages: bubblewrap (the grading sandbox), git, python3-venv;
#   2. TLJH itself, a pinned release, with no admin (nobody may open students' servers);
#   3. the course checkout in /opt/inplace-course, closed to other accounts;
#   4. the course's environment there (make setup: .venv with constraints.txt) and the hub's part of
#      it: accounts, course folder, exchange, the students' and grader's Jupyter config
#      (python -m instructor.classroom.hub setup, as make hub does, without starting its hub);
#   5. the course's packages in TLJH's user environment, with constraints.txt;
#   6. TLJH's settings (deploy/tljh/config.yaml, written here with tljh-config), the class list;
#   7. the extra hub config (formgrader as a service) and a reload.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$(cd "$HERE/../.." && pwd)"                       # the clone this script is run from
CHECKOUT="${INPLACE_CHECKOUT:-/opt/inplace-course}"     # the copy the hub uses (closed)
PREFIX="${INPLACE_HUB_PREFIX:-/srv/inplace-hub}"
TLJH_VERSION="${TLJH_VERSION:-2.0.0}"                  # a release tag of the TLJH installer; check it
ADMIN_NAME="${ADMIN_NAME:-instructor}"                  # the first grader's hub name
ROSTER="${ROSTER:-}"                                    # class list: id,first_name,last_name,email[,lms_id]
EXPECT_HUB="6.1."                                       # hub/constraints-hub.txt: jupyterhub==6.1.1

[ "$(id -u)" = 0 ] || { echo "run as root (sudo)" >&2; exit 1; }

# 1. System packages. bubblewrap runs every submission; the grader account uses it unprivileged, so
#    the kernel must allow unprivileged user namespaces (checked at the end).
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q bubblewrap git python3 python3-venv python3-dev curl make

# 2. TLJH, pinned. The bootstrap script is TLJH's documented installer; --version pins the release.
#    No --admin: the course runs without hub admins (docs/deploying.md).
if [ ! -x /opt/tljh/hub/bin/jupyterhub ]; then
  curl -fsSL "https://tljh.jupyter.org/bootstrap.py" | python3 - --version "$TLJH_VERSION"
fi
HUB_VERSION="$(/opt/tljh/hub/bin/python -c 'import jupyterhub; print(jupyterhub.__version__)')"
case "$HUB_VERSION" in
  "$EXPECT_HUB"*) ;;
  *) echo "warning: TLJH's hub is JupyterHub $HUB_VERSION; the course's servers and formgrader run" \
          "jupyterhub ${EXPECT_HUB}x (hub/constraints-hub.txt). Pick a TLJH_VERSION with that hub." >&2 ;;
esac

# 3. The checkout the hub uses: a clone of this one, owned by root and closed to students
#    (setup --lock-checkout below does chmod o-rwx; it holds source/ and the hidden checks).
if [ ! -d "$CHECKOUT/.git" ]; then
  git clone --quiet "$SRC" "$CHECKOUT"
else
  git -C "$CHECKOUT" pull --quiet --ff-only "$SRC" HEAD || echo "note: $CHECKOUT has local commits; not updated" >&2
fi

# 4. The course environment and the hub's accounts/folders, exactly as `make hub` makes them
#    (without starting the one-machine hub: TLJH is the hub here).
make -C "$CHECKOUT" setup
"$CHECKOUT/.venv/bin/python" -m pip install --quiet -c "$CHECKOUT/constraints.txt" \
    -c "$CHECKOUT/hub/constraints-hub.txt" jupyterhub
( cd "$CHECKOUT" && .venv/bin/python -m instructor.classroom.hub setup --prefix "$PREFIX" --lock-checkout )

# 5. The course's packages in TLJH's user environment (what students' servers run): the course
#    package `autograder` as plain files (not editable: nothing points into the closed checkout)
#    and its dependencies at the versions of constraints.txt. Only constraints.txt: TLJH keeps its
#    own jupyterhub there, matching its hub.
/opt/tljh/user/bin/python -m pip install --quiet -c "$CHECKOUT/constraints.txt" "$CHECKOUT"
#    nbgrader switches its own formgrader on in every environment it is installed in; its submission
#    page runs a student's script as the grader. Off in the user environment (the course's formgrader is
#    the hub service; autograder/course_formgrader.py): a grader's own `jupyter lab` serves none.
/opt/tljh/user/bin/python -m autograder.course_formgrader install

# 6. TLJH's settings: the same keys as deploy/tljh/config.yaml.
tljh-config set auth.type firstuseauthenticator.FirstUseAuthenticator
tljh-config set auth.FirstUseAuthenticator.create_users false
tljh-config set auth.FirstUseAuthenticator.min_password_length 10
tljh-config set limits.memory 4G
tljh-config set limits.cpu 2
tljh-config set user_environment.default_app jupyterlab
tljh-config set services.cull.enabled true
tljh-config set services.cull.timeout 3600
# who may sign in: the graders and the class list's ids (gradebook students too, through the course's
# reader: the same checks as `hub roster`, minus the OS accounts, which TLJH makes itself)
touch "$PREFIX/graders.txt"
chmod 0644 "$PREFIX/graders.txt"
grep -qx "$ADMIN_NAME" "$PREFIX/graders.txt" || echo "$ADMIN_NAME" >> "$PREFIX/graders.txt"
while read -r name; do
  [ -n "$name" ] && tljh-config add-item users.allowed "$name" >/dev/null
done < <(grep -v '^[[:space:]]*#' "$PREFIX/graders.txt")
if [ -n "$ROSTER" ]; then
  ( cd "$CHECKOUT" && .venv/bin/python - "$ROSTER" "$PREFIX" <<'PY'
import sys
from pathlib import Path
from instructor.classroom.handins import read_roster
from instructor.classroom.hub import Hub, add_to_gradebook
students = read_roster(Path(sys.argv[1]))          # refuses a bad file with its line numbers
add_to_gradebook(Hub.load(Path(sys.argv[2])), [(s.id, s) for s in students])
print("\n".join(s.id for s in students))
PY
  ) | while read -r sid; do tljh-config add-item users.allowed "$sid" >/dev/null; done
fi

# 7. Formgrader as a hub service, and the students' nbgrader view: the extra config, which TLJH's
#    hub reads from jupyterhub_config.d; its settings come through a systemd drop-in.
install -d -m 0755 /opt/tljh/config/jupyterhub_config.d
install -m 0644 "$HERE/jupyterhub_config.d/inplace_course.py" /opt/tljh/config/jupyterhub_config.d/
install -d -m 0755 /etc/systemd/system/jupyterhub.service.d
cat > /etc/systemd/system/jupyterhub.service.d/inplace-course.conf <<CONF
[Service]
Environment=INPLACE_HUB_PREFIX=$PREFIX
Environment=INPLACE_CHECKOUT=$CHECKOUT
CONF
systemctl daemon-reload
tljh-config reload hub

# The sandbox as the grader account (what formgrader's Autograde uses): must report bubblewrap true.
GRADER="$(cd "$CHECKOUT" && .venv/bin/python -c 'import json,sys; h=json.load(open(sys.argv[1])); print(h["names_prefix"]+"inplace-grader")' "$PREFIX/state/hub.json")"
( cd "$PREFIX/course" && runuser -u "$GRADER" -- env -i PATH="$PREFIX/env/bin:/usr/bin:/bin" HOME="/home/$GRADER" \
    LANG=C.UTF-8 "$PREFIX/env/bin/python" -m instructor.sandbox ) || \
  echo "warning: the sandbox check failed: is kernel.unprivileged_userns_clone (or AppArmor's userns restriction) blocking bubblewrap?" >&2
echo "TLJH is up: graders in $PREFIX/graders.txt open /services/inplace-course/formgrader"
