#!/usr/bin/env bash
# Runs a command (`make test`: pytest) with TMPDIR in a fresh folder on a memory file system, removed when the
# command ends; its exit status is the command's. Why: the suite creates thousands of SQLite and Chroma databases
# under pytest's tmp_path and tempfile's folders, and a commit in rollback-journal mode, a WAL checkpoint or a new
# file's directory entry is an fsync, ~5 ms on a virtual disk: a tenth of a second per test of a worker waiting with
# its core idle (docs/operations.md, "CI time, session 46"). The code under test is the same and calls the same
# fsyncs; no test simulates a power cut, the one thing they guard against (a SIGKILLed server's writes survive either
# way). Where there is no such file system with room, or TDA_TEST_TMP_ROOT is set empty, TMPDIR is left as it is.
#   TDA_TEST_TMP_ROOT     where to make the folder (default /dev/shm; it must be tmpfs or ramfs)
#   TDA_TEST_TMP_MIN_MB   the room it must have free (default 4096: a whole run's files peaked at ~740 MB)
set -euo pipefail
root=${TDA_TEST_TMP_ROOT-/dev/shm}
min_mb=${TDA_TEST_TMP_MIN_MB:-4096}

in_memory() {
  [ -n "$root" ] && [ -d "$root" ] && [ -w "$root" ] || return 1
  case "$(stat -f -c %T "$root")" in tmpfs | ramfs) ;; *) return 1 ;; esac
  [ "$(df -Pk "$root" | awk 'NR == 2 {print int($4 / 1024)}')" -ge "$min_mb" ]
}

if in_memory; then
  folder=$(mktemp -d "$root/tda-tests.XXXXXX")
  chmod 755 "$folder"  # the tests' PostgreSQL servers run as the postgres user: it must reach its folders inside
  trap 'rm -rf "$folder"' EXIT
  export TMPDIR=$folder
fi
"$@"
