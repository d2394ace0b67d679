#!/usr/bin/env bash
# The course on Zero to JupyterHub, from a clone of the course, with kubectl and helm pointed at the
# cluster and docker logged in to REGISTRY:
#
#   REGISTRY=registry.example.org/inplace-course NS=inplace bash deploy/z2jh/install.sh
#   ROSTER=class.csv NS=inplace bash deploy/z2jh/install.sh roster      # the class list, any time later
#
# Idempotent (helm upgrade --install, kubectl apply). Steps:
#   1. the two images (Dockerfile: student, grader) from the committed tree, tag <distributed>-<version>;
#   2. the API tokens of the two hub services, kept outside the repository (SECRETS_DIR);
#   3. ngshare, the hub, formgrader, the Dask cluster, pinned chart versions;
#   4. the course in ngshare: the formgrader service as its instructor.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NS="${NS:-inplace}"
REGISTRY="${REGISTRY:-registry.example.org/inplace-course}"
SECRETS_DIR="${SECRETS_DIR:-$HOME/.inplace-z2jh}"
Z2JH_VERSION="${Z2JH_VERSION:?set Z2JH_VERSION: a jupyterhub chart release whose hub runs JupyterHub 6.1}"
NGSHARE_CHART_VERSION=0.6.0
DASK_CHART_VERSION=2026.8.0
COURSE_ID=inplace-autograd

# The image tag: constraints.txt's distributed pin and the course's version (values files use the same).
DISTRIBUTED="$(sed -n 's/^distributed==//p' "$ROOT/constraints.txt")"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml")"
TAG="$DISTRIBUTED-$VERSION"
for f in values.yaml dask-values.yaml formgrader.yaml; do
  grep -q "$TAG" "$HERE/$f" || { echo "$HERE/$f does not name image tag $TAG: update it" >&2; exit 1; }
done

roster() {
  # ngshare's students and the gradebook's, from the course's class list (same reader as grade --roster)
  local csv="${ROSTER:?ROSTER=class.csv}"
  kubectl -n "$NS" cp "$csv" deploy/inplace-course-formgrader:/srv/inplace/course/class.csv 2>/dev/null || \
    kubectl -n "$NS" exec -i deploy/inplace-course-formgrader -c formgrader -- sh -c 'cat > /srv/inplace/course/class.csv' < "$csv"
  kubectl -n "$NS" exec deploy/inplace-course-formgrader -c formgrader -- python - <<'PY'
import csv, sys
sys.path.insert(0, "/srv/inplace/course")
from pathlib import Path
from nbgrader.api import Gradebook
from instructor.classroom.handins import read_roster
students = read_roster(Path("/srv/inplace/course/class.csv"))
with Gradebook("sqlite:////srv/inplace/course/gradebook.db", course_id="inplace-autograd") as gb:
    for s in students:
        gb.update_or_create_student(s.id, first_name=s.first_name or None, last_name=s.last_name or None,
                                    email=s.email or None)
with open("/srv/inplace/course/ngshare-students.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["student_id", "first_name", "last_name", "email"])
    w.writerows([s.id, s.first_name, s.last_name, s.email] for s in students)
print(f"{len(students)} students in the gradebook")
PY
  kubectl -n "$NS" exec deploy/inplace-course-formgrader -c formgrader -- \
    ngshare-course-management add_students "$COURSE_ID" /srv/inplace/course/ngshare-students.csv
}

if [ "${1:-}" = roster ]; then roster; exit 0; fi

# 1. Images, built from the committed tree only (git archive: no venv, no gradebook, no submissions).
for target in student grader; do
  git -C "$ROOT" archive --format=tar HEAD | \
    docker build -f deploy/z2jh/Dockerfile --target "$target" -t "$REGISTRY/$target:$TAG" -
  docker push "$REGISTRY/$target:$TAG"
done

# 2. Tokens: made once, kept in SECRETS_DIR (0700), never in the repository.
install -d -m 0700 "$SECRETS_DIR"
[ -s "$SECRETS_DIR/formgrader-token" ] || openssl rand -hex 32 > "$SECRETS_DIR/formgrader-token"
[ -s "$SECRETS_DIR/ngshare-token" ] || openssl rand -hex 32 > "$SECRETS_DIR/ngshare-token"
chmod 0600 "$SECRETS_DIR"/*-token
cat > "$SECRETS_DIR/secrets.yaml" <<YAML
hub:
  services:
    inplace-course:
      apiToken: "$(cat "$SECRETS_DIR/formgrader-token")"
    ngshare:
      apiToken: "$(cat "$SECRETS_DIR/ngshare-token")"
YAML
chmod 0600 "$SECRETS_DIR/secrets.yaml"
kubectl get namespace "$NS" >/dev/null 2>&1 || kubectl create namespace "$NS"
kubectl -n "$NS" create secret generic inplace-course-formgrader \
  --from-file=api-token="$SECRETS_DIR/formgrader-token" --dry-run=client -o yaml | kubectl -n "$NS" apply -f -

# 3. Charts, pinned.
helm repo add jupyterhub https://hub.jupyter.org/helm-chart/ >/dev/null
helm repo add ngshare https://libretexts.github.io/ngshare-helm-repo/ >/dev/null
helm repo add dask https://helm.dask.org >/dev/null
helm repo update >/dev/null
helm upgrade --install ngshare ngshare/ngshare --namespace "$NS" --version "$NGSHARE_CHART_VERSION" \
  --values "$HERE/ngshare-values.yaml" --set "ngshare.hub_api_token=$(cat "$SECRETS_DIR/ngshare-token")"
helm upgrade --install jupyterhub jupyterhub/jupyterhub --namespace "$NS" --version "$Z2JH_VERSION" \
  --values "$HERE/values.yaml" --values "$SECRETS_DIR/secrets.yaml"
kubectl -n "$NS" apply -f "$HERE/formgrader.yaml"
helm upgrade --install inplace-dask dask/dask --namespace "$NS" --version "$DASK_CHART_VERSION" \
  --values "$HERE/dask-values.yaml"
kubectl -n "$NS" rollout status deploy/inplace-course-formgrader --timeout=600s

# 4. The course in ngshare, the formgrader service (hub name inplace-course) as its instructor.
#    ngshare-course-management runs as an ngshare admin: here, from the formgrader pod with an admin's
#    token (JUPYTERHUB_API_TOKEN of a user listed in ngshare-values.yaml's admins).
echo "Now, once, as an ngshare admin (ngshare-values.yaml: admins) in their own server's terminal:"
echo "  ngshare-course-management create_course $COURSE_ID inplace-course"
echo "Then: ROSTER=class.csv NS=$NS bash deploy/z2jh/install.sh roster"
