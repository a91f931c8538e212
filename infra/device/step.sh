# Source on a lent GPU machine after setup.sh: `step NAME SECONDS CMD...` runs CMD under a time limit with its
# output in $OUT/NAME.log, then prints NAME, its exit code and seconds, and the log's last ${TAIL:-15} lines, so
# one call can run several measurements and a hung one loses only its own slot.
step() {
  local name=$1 limit=$2 began=$SECONDS rc
  shift 2
  timeout -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "## $name rc=$rc $((SECONDS - began))s"
  tail -n "${TAIL:-15}" "$OUT/$name.log"
}
