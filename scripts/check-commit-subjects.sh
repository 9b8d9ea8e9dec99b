#!/usr/bin/env bash
# Checks the message of every commit after the last one that predates the commit convention
# (CONTRIBUTING.md, "Commits") with the commit-msg hook: a subject of at most 72 characters,
# followed by a blank line. Older commits stay as they are. Fails naming each commit that
# breaks the convention. CI runs it before `make test` (.ci/run).
#
#   scripts/check-commit-subjects.sh [BASE [TIP]]   (default: the convention's base, HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."

# main's head when the convention was adopted: every commit after it follows the convention.
base=${1:-3881037fb26ffe785c58be175c10db18e3522bd5}
tip=${2:-HEAD}

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-commit-subjects: not a git checkout, nothing to check"
  exit 0
fi
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    # A shallow clone cannot tell which commits are new: say so, and leave the check to a full one.
    echo "check-commit-subjects: shallow clone without $base: not checked (git fetch --unshallow)" >&2
    exit 0
  fi
  echo "check-commit-subjects: commit $base is missing from this history" >&2
  exit 1
fi

hook=scripts/hooks/commit-msg
message=$(mktemp)
trap 'rm -f "$message"' EXIT
checked=0
bad=0
while read -r commit; do
  git log -1 --format=%B "$commit" > "$message"
  checked=$((checked + 1))
  if ! out=$("$hook" "$message" 2>&1); then
    bad=$((bad + 1))
    echo "check-commit-subjects: $(git log -1 --format='%h %an' "$commit"):" >&2
    echo "$out" | sed 's/^commit-msg: /  /' >&2
  fi
done < <(git rev-list "$base..$tip")

if [ "$bad" -ne 0 ]; then
  echo "check-commit-subjects: $bad of $checked commits after ${base:0:7} break the convention" >&2
  exit 1
fi
echo "check-commit-subjects: $checked commits after ${base:0:7} follow the convention"
