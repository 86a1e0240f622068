# tests/lib/checks.sh: the assertion helpers the shell test scripts share (sourced, not run).
# The caller sets CHECK_LOG (a file for the last check's output) before the first `check`;
# PASSED and FAILED count the results.
PASSED=0
FAILED=0

# check NAME CMD...: runs one assertion; never stops the run.
check() {
  local name=$1
  shift
  if "$@" >"$CHECK_LOG" 2>&1; then
    PASSED=$((PASSED + 1))
    echo "ok - $name"
  else
    FAILED=$((FAILED + 1))
    echo "not ok - $name"
    # The head says why (a panic's message comes before its backtrace), the tail where it ended.
    if (($(wc -l <"$CHECK_LOG") > 60)); then
      head -n 20 "$CHECK_LOG" | sed 's/^/    /'
      echo "    ..."
      tail -n 40 "$CHECK_LOG" | sed 's/^/    /'
    else
      sed 's/^/    /' "$CHECK_LOG"
    fi
  fi
}

# eventually SECONDS CMD...: retries CMD until it succeeds or the time is up; on time-out it runs
# CMD once more so its output shows why.
eventually() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || {
      "$@" || true
      return 1
    }
    sleep 0.5
  done
}
